"""The data movement around the layers with a weight zero point (quantize.zero_point_split) on Helium:
Gather with constant indices (toolchain/ops/gather.py: each run of consecutive rows one
tail-predicated vector copy, a short output row one byte gather) and ScatterChannels
(toolchain/ops/scatter_channels.py: one byte scatter store per pixel), with the portable kernels'
argument lists (c_templates/kernels/helium/{gather,scatter_channels}_s8.c.j2). They carry the input
channels that quantize.zero_point_widen / zero_point_halves append or duplicate per pixel and put the
recomputed channels back: with the portable kernels' per-run memcpy and per-channel loops these
copies were a third of a U8U8 QDQ MobileNetV2's extra cost on the Cortex-M55. Pure copies: exact by
construction. The DSP keeps the portable kernels (no byte gather / scatter there).
"""
from __future__ import annotations

from toolchain.isa.helium import HELIUM_HEADERS, MVE
from toolchain.ops.registry import KernelVariant, OpKind, add_variants

add_variants(OpKind.GATHER, KernelVariant("helium", "helium", "helium/gather_s8.c.j2", "ecc_helium_gather_s8",
                                          headers=HELIUM_HEADERS, requires=MVE))
add_variants(OpKind.SCATTER_CHANNELS,
             KernelVariant("helium", "helium", "helium/scatter_channels_s8.c.j2", "ecc_helium_scatter_channels_s8",
                           headers=HELIUM_HEADERS, requires=MVE, inplace_inputs=(0,)))
