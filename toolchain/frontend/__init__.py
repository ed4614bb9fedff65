"""Frontends: model files -> Graph (toolchain.ir). One module per format."""
