"""edgecc: an ahead-of-time compiler from trained networks to small, verified int8 C for Arm boards.

Public API: compile_model (toolchain.pipeline), load_onnx, interpret.
"""
__version__ = "0.1.0"

__all__ = ["__version__", "compile_model", "interpret", "load_onnx"]


def __getattr__(name: str):  # lazy: `import toolchain` stays cheap for the CLI's --help
    if name == "compile_model":
        from toolchain.pipeline import compile_model

        return compile_model
    if name == "interpret":
        from toolchain.interpret import interpret

        return interpret
    if name == "load_onnx":
        from toolchain.frontend.onnx import load_onnx

        return load_onnx
    raise AttributeError(name)
