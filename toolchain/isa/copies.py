"""The data movement around the layers with a weight zero point (quantize.zero_point_split) on Helium
and NEON: Gather with constant indices (toolchain/ops/gather.py) and ScatterChannels
(toolchain/ops/scatter_channels.py), with the portable kernels' argument lists. They carry the input
channels that quantize.zero_point_widen / zero_point_halves append or duplicate per pixel and put the
recomputed channels back: with the portable kernels' per-run memcpy and per-channel loops these
copies were a third of a U8U8 QDQ MobileNetV2's extra cost on the Cortex-M55 and a fifth of it on
AArch64. Pure copies: exact by construction, under either rounding mode.

Helium (c_templates/kernels/helium/{gather,scatter_channels}_s8.c.j2): each run of consecutive rows
one tail-predicated vector copy, a short output row one byte gather; one byte scatter store per
pixel. NEON (c_templates/kernels/neon/{gather,scatter_channels}_s8.c.j2): rows of at most 64 bytes
as TBL look-ups (several short rows per 16-byte store), longer rows as 16-byte vector copies per
run; one scattered channel as 8 pixels per vector (lane stores). NHWC only: a gather axis and the
scatter's channel axis are the logical ones, which CHWN storage reorders. The DSP keeps the portable
kernels (no byte gather / scatter there).
"""
from __future__ import annotations

from toolchain.isa.helium import HELIUM_HEADERS, MVE
from toolchain.isa.neon import NEON_HEADERS
from toolchain.ops.registry import KernelVariant, OpKind, add_variants

add_variants(OpKind.GATHER,
             KernelVariant("helium", "helium", "helium/gather_s8.c.j2", "ecc_helium_gather_s8",
                           headers=HELIUM_HEADERS, requires=MVE),
             KernelVariant("neon", "neon", "neon/gather_s8.c.j2", "ecc_neon_gather_s8", headers=NEON_HEADERS))
add_variants(OpKind.SCATTER_CHANNELS,
             KernelVariant("helium", "helium", "helium/scatter_channels_s8.c.j2", "ecc_helium_scatter_channels_s8",
                           headers=HELIUM_HEADERS, requires=MVE, inplace_inputs=(0,)),
             KernelVariant("neon", "neon", "neon/scatter_channels_s8.c.j2", "ecc_neon_scatter_channels_s8",
                           headers=NEON_HEADERS, inplace_inputs=(0,)))
