"""Op modules. Importing this package registers every op in toolchain.ops.registry.REGISTRY."""
from toolchain.ops import (  # noqa: F401 - imported for their @register side effect
    add,
    batch_norm,
    binary,
    clamp,
    concat,
    conv2d,
    depthwise_conv2d,
    fully_connected,
    hard_swish,
    leaky_relu,
    logistic,
    mean,
    pad,
    pool2d,
    prelu,
    quantize_ops,
    relayout,
    resize,
    shape_ops,
    softmax,
    tanh,
)
from toolchain.ops.registry import REGISTRY, OpKind, Unsupported, opdef

__all__ = ["REGISTRY", "OpKind", "Unsupported", "opdef"]
