"""The body runner the engine hands to Loop, If and TensorIterator in their Context (`context.bodies`): it
builds a body's graph and loads Models of it whose Parameters take the shapes and types the outer op gives."""
from __future__ import annotations

from .graph import build_graph
from .runtime import Model


class _BodyModel(Model):
    """A body's inputs are the outer op's tensors, already checked: only their bytes count against the budget."""

    def _check_input(self, desc, layer_id, array):
        if self.budget is not None:
            self.budget.check(array.nbytes, f"body input {desc.name!r}")
        return array


class BodyRunner:
    """What ops with bodies may ask of the engine. `bind` is the loader's (irrun/engine/loader.py), which
    makes the runner it puts in the Context of the ops it binds."""

    def __init__(self, bind):
        self._bind = bind

    @staticmethod
    def graph(doc, context):
        return build_graph(doc, context)

    def model(self, graph, budget, param_infos: dict) -> Model:
        return self._bind(graph, budget, parameter_infos=param_infos, model_class=_BodyModel)
