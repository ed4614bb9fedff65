"""Drop nodes whose outputs nobody reads, and Reshapes that do not change the shape."""
from __future__ import annotations

from toolchain.ir import Graph
from toolchain.ops.registry import OpKind


def remove_dead(graph: Graph) -> Graph:
    """Remove unused nodes (backwards) and identity Reshapes (their readers read the input)."""
    while True:  # rescan after each removal: the next no-op Reshape may read the removed one
        node = next((n for n in graph.nodes if n.op == OpKind.RESHAPE and n.outputs[0] not in graph.outputs
                     and graph.t(n.inputs[0]).shape == graph.t(n.outputs[0]).shape), None)
        if node is None:
            break
        graph = graph.with_nodes([n for n in graph.nodes if n is not node]).rename_uses(node.outputs[0], node.inputs[0])
    live = set(graph.outputs)
    kept = []
    for node in reversed(graph.nodes):
        if any(o in live for o in node.outputs):
            kept.append(node)
            live.update(i for i in node.inputs if i)
    return graph.with_nodes(reversed(kept))
