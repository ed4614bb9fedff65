"""Op modules. Importing this package registers every op in toolchain.ops.registry.REGISTRY."""
from toolchain.ops import (  # noqa: F401 - imported for their @register side effect
    add,
    batch_norm,
    clamp,
    conv2d,
    depthwise_conv2d,
    fully_connected,
    pool2d,
    shape_ops,
    softmax,
)
from toolchain.ops.registry import REGISTRY, OpKind, Unsupported, opdef

__all__ = ["REGISTRY", "OpKind", "Unsupported", "opdef"]
