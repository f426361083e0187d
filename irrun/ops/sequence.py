"""Recurrent sequences: RNNSequence-5, GRUSequence-5, LSTMSequence-5.

OpenVINO's reference behaviour: gates are split from W/R/B in the order z, r, h (GRU) and f, i, c, o
(LSTM); `clip` > 0 clamps every gate's pre-activation (not the LSTM cell state); steps past a batch
element's sequence length output 0 and leave its final state at its last valid step; the reverse
direction reverses each sequence within its own length. The kernel loops over time steps in Python;
batch and hidden math is vectorised."""
from __future__ import annotations

import numpy as np

from ..errors import ExecutionError, ShapeError
from .attrs import Bool, Enum, Float, Floats, Int, Names
from .blas import matmul
from .registry import Op, TensorInfo, op
from .shapes import require_rank, shape_str
from .stricter import refuse

ACTIVATIONS = {
    "sigmoid": lambda x: _sigmoid(x),
    "tanh": np.tanh,
    "relu": lambda x: np.maximum(x, 0),
}


def require_input_size(w_shape, in_size, port: int) -> None:
    """W's last dim against X's: OpenVINO's reader does not compare them, the op cannot run without it."""
    if w_shape is not None and None not in (w_shape[-1], in_size) and w_shape[-1] != in_size:
        raise ShapeError(f"W shape {shape_str(w_shape)} has input size {w_shape[-1]}, X has {in_size}",
                         rule="port.dims.spec", port=port)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))  # exp overflow gives 0: the runtime runs kernels under np.errstate


class Recurrent(Op):
    """What the sequence ops and the single-step cells share: attributes, their checks, gate layout."""

    hidden_size = Int()
    activations = Names()
    activations_alpha = Floats(default=())
    activations_beta = Floats(default=())
    clip = Float(default=0.0)
    gates = 1
    hidden_from_inputs = False
    num_states = 1  # initial states among the inputs (LSTM: H and C)
    activation_count = 1

    def bias_gates(self):
        return self.gates

    def check_attributes(self):
        if len(self.activations) != self.activation_count:
            raise ShapeError(f"activations {list(self.activations)} must name {self.activation_count} functions",
                             rule="attr.length")
        for name in self.activations:
            if name not in ACTIVATIONS:
                raise ShapeError(f"activation {name!r} is not supported (relu, sigmoid, tanh)", rule="attr.value")
        if self.hidden_size <= 0 and not self.hidden_from_inputs:
            raise ShapeError(f"hidden_size {self.hidden_size} must be positive", rule="attr.range")

    def hidden_size_problem(self, given):
        """The cells' hidden_size against the inputs' hidden size `given` (None: not known). OpenVINO's reader
        takes the inputs' size whatever the attribute says; its CPU plugin cannot compile the op."""
        if given is not None and given != self.hidden_size:
            return ShapeError(f"hidden_size {self.hidden_size} differs from the inputs' hidden size {given}",
                              rule="attr.value.spec")
        if given is None and self.hidden_size <= 0:
            return ShapeError(f"hidden_size {self.hidden_size} must be positive", rule="attr.range")
        return None


class _RecurrentSequence(Recurrent):
    hidden_from_inputs = True  # OpenVINO's reader takes the hidden size of the inputs (a 0 attribute too)
    direction = Enum("forward", "reverse", "bidirectional")

    # ---------------------------------------------------------------- shape inference

    def infer(self, inputs):
        self.check_inputs(len(inputs))
        x = inputs[0]
        states = inputs[1:1 + self.num_states]
        seq_lengths = inputs[1 + self.num_states]
        w, r, b = inputs[2 + self.num_states:5 + self.num_states]
        port_w = 2 + self.num_states
        self.check_attributes()
        float_type = x.type
        for port, info in enumerate(inputs):
            if port == 1 + self.num_states:
                continue
            if not info.type.is_float or info.type != float_type:
                raise ShapeError(f"input {port} has type {info.type}, expected the floating-point type of X "
                                 f"({float_type})", rule="port.type", port=port)
        stricter = None
        if not seq_lengths.type.is_integer:  # OpenVINO's reader does not check their type
            stricter = ShapeError(f"sequence lengths must be integers, got {seq_lengths.type}", rule="port.type.spec",
                                  port=1 + self.num_states)
        require_rank(x.shape, (3,), "X", 0)
        for k, state in enumerate(states):
            require_rank(state.shape, (3,), "initial state", 1 + k)
        require_rank(seq_lengths.shape, (1,), "sequence lengths", 1 + self.num_states)
        require_rank(w.shape, (3,), "W", port_w)
        require_rank(r.shape, (3,), "R", port_w + 1)
        require_rank(b.shape, (2,), "B", port_w + 2)
        directions = 2 if self.direction == "bidirectional" else 1
        hidden = self.hidden_size
        given = None
        for port, shape in [(1 + k, st.shape) for k, st in enumerate(states)] + [(port_w + 1, r.shape)]:
            if shape is not None and shape[2] is not None:
                if given is not None and shape[2] != given:  # OpenVINO merges these dims before anything else
                    raise ShapeError(f"hidden size {shape[2]} of {shape_str(shape)} differs from the other inputs' "
                                     f"{given}", rule="port.dims", port=port)
                given = shape[2]
        if given is None and hidden <= 0:
            raise ShapeError(f"hidden_size {hidden} must be positive", rule="attr.range")
        if given is not None and given != hidden:
            # OpenVINO's reader takes the inputs' hidden size; its CPU plugin then cannot compile the op.
            stricter = stricter or ShapeError(
                f"hidden_size {hidden} differs from the inputs' hidden size {given}", rule="attr.value.spec")
            hidden = given
        batch, steps, in_size = (None, None, None) if x.shape is None else x.shape
        expected = {
            "initial state": [(1 + k, s.shape, (batch, directions, hidden)) for k, s in enumerate(states)],
            "sequence lengths": [(1 + self.num_states, seq_lengths.shape, (batch,))],
            "W": [(port_w, w.shape, (directions, self.gates * hidden, None))],
            "R": [(port_w + 1, r.shape, (directions, self.gates * hidden, hidden))],
            "B": [(port_w + 2, b.shape, (directions, self.bias_gates() * hidden))],
        }
        for what, checks in expected.items():
            for port, shape, want in checks:
                if shape is None:
                    continue
                for got_dim, want_dim in zip(shape, want):
                    if got_dim is not None and want_dim is not None and got_dim != want_dim:
                        raise ShapeError(f"{what} shape {shape_str(shape)} does not match the expected "
                                         f"{shape_str(want)}", rule="port.dims", port=port)
        # Merge the batch dim across inputs where X leaves it dynamic.
        if batch is None:
            for s in [*(st.shape for st in states), seq_lengths.shape]:
                if s is not None and s[0] is not None:
                    batch = s[0]
                    break
        try:  # OpenVINO's reader does not compare them (checked after its own checks)
            require_input_size(w.shape, in_size, port_w)
        except ShapeError as exc:
            stricter = stricter or exc
        y = TensorInfo((batch, directions, steps, hidden), float_type)
        state = TensorInfo((batch, directions, hidden), float_type)
        if stricter is not None:
            refuse(stricter)  # the checker goes on with OpenVINO's outputs
        return [y] + [state] * self.num_states

    # ---------------------------------------------------------------- run

    def run(self, inputs, in_infos, out_infos):
        x = inputs[0]
        states = inputs[1:1 + self.num_states]
        seq_lengths = inputs[1 + self.num_states].astype(np.int64)
        w, r, b = inputs[2 + self.num_states:5 + self.num_states]
        dtype = x.dtype
        ctype = np.float64 if dtype == np.float64 else np.float32
        batch, steps, _ = x.shape
        if (seq_lengths < 0).any():
            raise ExecutionError(f"sequence lengths {seq_lengths.tolist()} include a negative value",
                                 rule="input.value", port=1 + self.num_states)
        if self.direction != "forward" and (seq_lengths > steps).any():
            # OpenVINO reverses each sequence within its length (ReverseSequence), which refuses this
            raise ExecutionError(f"sequence lengths {seq_lengths.tolist()} exceed the {steps} time steps",
                                 rule="input.value", port=1 + self.num_states)
        if self.direction == "bidirectional":
            passes = [(0, False), (1, True)]
        else:
            passes = [(0, self.direction == "reverse")]
        ys, finals = [], [[] for _ in range(self.num_states)]
        for d, reverse in passes:
            y, last = run_pass(self, x.astype(ctype), [s[:, d].astype(ctype) for s in states], seq_lengths,
                               w[d].astype(ctype), r[d].astype(ctype), b[d].astype(ctype), reverse)
            ys.append(y)
            for k, value in enumerate(last):
                finals[k].append(value)
        y = np.stack(ys, axis=1).astype(dtype)
        return [y] + [np.stack(f, axis=1).astype(dtype) for f in finals]

    def clipped(self, gate):
        if self.clip > 0:
            return np.clip(gate, -self.clip, self.clip)
        return gate

    def act(self, index, gate):
        return ACTIVATIONS[self.activations[index]](self.clipped(gate))


def _reverse_within(x, seq_lengths):
    """Reverse each batch element's first seq_length steps along axis 1 (ReverseSequence)."""
    steps = x.shape[1]
    t = np.arange(steps)
    lengths = np.minimum(seq_lengths, steps)[:, None]
    source = np.where(t[None, :] < lengths, lengths - 1 - t[None, :], t[None, :])
    return np.take_along_axis(x, source.reshape(*source.shape, *([1] * (x.ndim - 2))), axis=1)


def run_pass(op_, x, states, seq_lengths, w, r, b, reverse):
    """One direction: Y (batch, steps, hidden) and the final states, each (batch, hidden)."""
    batch, steps, _ = x.shape
    hidden = op_.hidden_size
    if reverse:
        x = _reverse_within(x, seq_lengths)
    x_w = matmul(x, w.T)  # (batch, steps, gates * hidden): all steps at once
    y = np.zeros((batch, steps, hidden), dtype=x.dtype)
    finals = [np.zeros((batch, hidden), dtype=x.dtype) for _ in states]
    current = list(states)
    if (seq_lengths == steps).all():  # every sequence spans exactly all steps: no masking needed
        for t in range(steps):
            current = op_.cell(x_w[:, t], current, r, b)
            y[:, t] = current[0]
        finals = current if steps else finals
        if reverse:
            y = _reverse_within(y, seq_lengths)
        return y, finals
    for t in range(steps):
        current = op_.cell(x_w[:, t], current, r, b)
        alive = (t < seq_lengths)[:, None]
        y[:, t] = np.where(alive, current[0], 0)
        last = (seq_lengths - 1 == t)[:, None]
        for k, value in enumerate(current):
            finals[k] = np.where(last, value, finals[k])
        current = [np.where(alive, value, 0) for value in current]
    if reverse:
        y = _reverse_within(y, seq_lengths)
    return y, finals


@op("RNNSequence", 5)
class RNNSequence5(_RecurrentSequence):
    activations = Names(default=("tanh",))
    num_inputs = (6, 6)

    def cell(self, x_w, states, r, b):
        (h,) = states
        return [self.act(0, x_w + matmul(h, r.T) + b)]


@op("GRUSequence", 5)
class GRUSequence5(_RecurrentSequence):
    activations = Names(default=("sigmoid", "tanh"))
    linear_before_reset = Bool(default=False)
    num_inputs = (6, 6)
    gates = 3
    activation_count = 2

    def bias_gates(self):
        return 4 if self.linear_before_reset else 3

    def cell(self, x_w, states, r, b):
        (h,) = states
        n = self.hidden_size
        r_z, r_r, r_h = r[:n], r[n:2 * n], r[2 * n:3 * n]
        h_r = matmul(h, np.concatenate([r_z, r_r]).T)
        z = self.act(0, x_w[:, :n] + h_r[:, :n] + b[:n])
        reset = self.act(0, x_w[:, n:2 * n] + h_r[:, n:] + b[n:2 * n])
        if self.linear_before_reset:
            candidate = x_w[:, 2 * n:] + reset * (matmul(h, r_h.T) + b[3 * n:4 * n]) + b[2 * n:3 * n]
        else:
            candidate = x_w[:, 2 * n:] + matmul(reset * h, r_h.T) + b[2 * n:3 * n]
        candidate = self.act(1, candidate)
        return [(1 - z) * candidate + z * h]


@op("LSTMSequence", 5)
class LSTMSequence5(_RecurrentSequence):
    activations = Names(default=("sigmoid", "tanh", "tanh"))
    num_inputs = (7, 7)
    gates = 4
    num_states = 2
    activation_count = 3

    def cell(self, x_w, states, r, b):
        h, c = states
        n = self.hidden_size
        gates = x_w + matmul(h, r.T) + b
        forget = self.act(0, gates[:, :n])
        input_ = self.act(0, gates[:, n:2 * n])
        candidate = self.act(1, gates[:, 2 * n:3 * n])
        output = self.act(0, gates[:, 3 * n:])
        c_new = forget * c + input_ * candidate
        h_new = output * ACTIVATIONS[self.activations[2]](c_new)
        return [h_new, c_new]
