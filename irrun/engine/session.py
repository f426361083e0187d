"""Sessions: runs of one model that carry its ReadValue/Assign state from one run to the next."""
from __future__ import annotations

from types import MappingProxyType

import numpy as np

from ..ir.types import ElementType


class Session:
    """Runs of one model that carry its state: what the Assigns of a run write, the ReadValues of the next
    read. `run` takes and returns what `Model.run` does; `reset_state()` makes every variable unset again (so
    ReadValues give their init input, or zeros); `state` is a read-only view: variable id -> array, for the
    variables set so far. A run that fails changes no variable."""

    def __init__(self, model):
        self.model = model
        self._variables: dict[str, tuple[np.ndarray, ElementType]] = {}

    def run(self, inputs, observer=None) -> dict[str, np.ndarray]:
        outputs, writes = self.model._run(inputs, observer, self._variables)
        held = {id(array) for array, _ in self._variables.values()}
        for name, array in outputs.items():
            if id(array) in held:  # a ReadValue returned as an output: the caller may write to it
                outputs[name] = array.copy()
        returned = {id(array) for array in outputs.values()}
        variables = dict(self._variables)
        for var_id, (array, et) in writes.items():
            variables[var_id] = (array.copy() if id(array) in returned else array, et)  # the caller may write to outputs
        self._variables = variables
        return outputs

    def reset_state(self) -> None:
        self._variables = {}

    @property
    def state(self) -> MappingProxyType:
        views = {}
        for var_id, (array, _) in self._variables.items():
            view = array.view()
            view.flags.writeable = False
            views[var_id] = view
        return MappingProxyType(views)
