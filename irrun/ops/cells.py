"""Single recurrent steps: RNNCell-1, GRUCell-3, LSTMCell-4 and LSTMCell-1 (with peepholes).

The gate math is the one of the sequence ops (irrun/ops/sequence.py): gate order z, r, h (GRU) and
f, i, c, o (LSTM), `clip` > 0 clamps every gate's pre-activation (not the LSTM cell state).
LSTMCell-1 adds OpenVINO's peepholes: P holds three [hidden_size] vectors in the order f, i, o
(OpenVINO's reference splits it so, whatever its comments say); f and i add P * C(t-1) and o adds
P * C(t) before their activation.
input_forget: OpenVINO's reference source would couple the gates (i = 1 - f), but that kernel is not
reachable (evaluate() returns False) and the CPU plugin, the only implementation that runs, computes a
cell with input_forget=true as a plain LSTMCell-4: no coupling and no peepholes. irrun does the same.
OpenVINO only computes weights_format "fico" (its reference refuses the others).
"""
from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from .attrs import Bool, Enum, Names
from .blas import matmul
from .registry import TensorInfo, op
from .sequence import ACTIVATIONS, GRUSequence5, LSTMSequence5, Recurrent, RNNSequence5, require_input_size
from .shapes import require_rank, shape_str
from .stricter import refuse


class _Cell(Recurrent):
    bias_port = 4  # X, states..., W, R, B
    any_w_type = False
    hidden_from_inputs = True  # OpenVINO's reader takes the inputs' hidden size: hidden_size_problem

    def extra_inputs(self):
        """(port, name, expected shape) of inputs past B."""
        return []

    def infer(self, inputs):
        self.check_inputs(len(inputs))
        self.check_attributes()
        x = inputs[0]
        float_type = x.type
        for port, info in enumerate(inputs):
            if info.type.name == "dynamic" or (info.type == float_type and info.type.is_float):
                continue
            if float_type.name == "dynamic" and info.type.is_float:
                float_type = info.type
                continue
            lenient = self.any_w_type and port == 1 + self.num_states  # GRUCell: OpenVINO's reader takes it
            refuse(ShapeError(f"input {port} has type {info.type}, expected the floating-point type of X "
                              f"({float_type})", rule="port.type.spec" if lenient else "port.type", port=port))
        n = self.num_states
        require_rank(x.shape, (2,), "X", 0)
        for k in range(n):
            require_rank(inputs[1 + k].shape, (2,), "initial state", 1 + k)
        require_rank(inputs[1 + n].shape, (2,), "W", 1 + n)
        require_rank(inputs[2 + n].shape, (2,), "R", 2 + n)
        if len(inputs) > 3 + n:
            require_rank(inputs[3 + n].shape, (1,), "B", 3 + n)
        for port, what, _ in self.extra_inputs():
            if len(inputs) > port:
                require_rank(inputs[port].shape, (1,), what, port)
        known = [info.shape[1] for info in inputs[1:1 + n] + [inputs[2 + n]]
                 if info.shape is not None and info.shape[1] is not None]
        problem = self.hidden_size_problem(known[0] if known else None)  # raised after OpenVINO's own checks
        hidden = known[0] if known else (self.hidden_size if problem is None else None)
        batch, in_size = (None, None) if x.shape is None else x.shape
        for k in range(n):
            shape = inputs[1 + k].shape
            if shape is not None and batch is None:
                batch = shape[0]
        checks = [(1 + k, "initial state", (batch, hidden)) for k in range(n)]
        gate_rows = None if hidden is None else self.gates * hidden
        bias_rows = None if hidden is None else self.bias_gates() * hidden
        checks += [(1 + n, "W", (gate_rows, None)), (2 + n, "R", (gate_rows, hidden)), (3 + n, "B", (bias_rows,))]
        checks += self.extra_inputs()
        for port, what, want in checks:
            if port >= len(inputs) or inputs[port].shape is None:
                continue
            shape = inputs[port].shape
            for got_dim, want_dim in zip(shape, want):
                if got_dim is not None and want_dim is not None and got_dim != want_dim:
                    raise ShapeError(f"{what} shape {shape_str(shape)} does not match the expected "
                                     f"{shape_str(want)}", rule="port.dims", port=port)
        require_input_size(inputs[1 + n].shape, in_size, 1 + n)
        if problem is not None:
            raise problem
        state = TensorInfo((batch, hidden), float_type)
        return [state] * n

    def run(self, inputs, in_infos, out_infos):
        n = self.num_states
        x = inputs[0]
        dtype = x.dtype
        ctype = np.float64 if dtype == np.float64 else np.float32
        states = [s.astype(ctype) for s in inputs[1:1 + n]]
        w, r = inputs[1 + n].astype(ctype), inputs[2 + n].astype(ctype)
        if len(inputs) > 3 + n:
            b = inputs[3 + n].astype(ctype)
        else:
            b = np.zeros(self.bias_gates() * self.hidden_size, ctype)
        x_w = matmul(x.astype(ctype), w.T)
        outputs = self.step(x_w, states, r, b, inputs[4 + n:])
        return [value.astype(dtype) for value in outputs]

    def step(self, x_w, states, r, b, extra):
        return self.cell(x_w, states, r, b)

    def clipped(self, gate):
        if self.clip > 0:
            return np.clip(gate, -self.clip, self.clip)
        return gate

    def act(self, index, gate):
        return ACTIVATIONS[self.activations[index]](self.clipped(gate))


@op("RNNCell", 1)
class RNNCell1(_Cell):
    activations = Names(default=("tanh",))
    num_inputs = (4, 5)
    cell = RNNSequence5.cell


@op("GRUCell", 3)
class GRUCell3(_Cell):
    any_w_type = True
    activations = Names(default=("sigmoid", "tanh"))
    linear_before_reset = Bool(default=False)
    num_inputs = (4, 5)
    gates = 3
    activation_count = 2
    bias_gates = GRUSequence5.bias_gates
    cell = GRUSequence5.cell


@op("LSTMCell", 4)
class LSTMCell4(_Cell):
    activations = Names(default=("sigmoid", "tanh", "tanh"))
    num_inputs = (5, 6)
    gates = 4
    num_states = 2
    activation_count = 3
    cell = LSTMSequence5.cell


@op("LSTMCell", 1)
class LSTMCell1(LSTMCell4):
    weights_format = Enum("fico", "icof", "ifco", "ifoc", "iofc", default="fico")
    input_forget = Bool(default=False)
    num_inputs = (5, 7)

    def extra_inputs(self):
        return [(6, "P", (3 * self.hidden_size,))]

    def infer(self, inputs):
        if self.weights_format != "fico":
            raise ShapeError(f"weights_format {self.weights_format!r} is not supported: OpenVINO computes only "
                             f"'fico'", rule="attr.value")
        return super().infer(inputs)

    def step(self, x_w, states, r, b, extra):
        h, c = states
        n = self.hidden_size
        if not extra or self.input_forget:
            return self.cell(x_w, states, r, b)
        p = extra[0].astype(x_w.dtype)
        p_f, p_i, p_o = p[:n], p[n:2 * n], p[2 * n:]
        gates = x_w + matmul(h, r.T) + b
        forget = self.act(0, gates[:, :n] + p_f * c)
        input_ = self.act(0, gates[:, n:2 * n] + p_i * c)
        candidate = self.act(1, gates[:, 2 * n:3 * n])
        c_new = forget * c + input_ * candidate
        output = self.act(0, gates[:, 3 * n:] + p_o * c_new)
        h_new = output * ACTIVATIONS[self.activations[2]](c_new)
        return [h_new, c_new]
