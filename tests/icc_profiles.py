"""ICC colour profiles built byte by byte for the image tests (Pillow's ImageCms makes only sRGB,
LAB and XYZ ones): an RGB matrix/TRC profile with Adobe RGB (1998)'s primaries and gamma, and a
small CMYK printer profile (an 8-bit lookup table into CIELAB). ICC.1:2001-04 (version 2) layout:
a 128-byte header, a tag table, then the tags, each on a 4-byte boundary.

    adobe_rgb_like()   # bytes, to save with an image: Image.save(..., icc_profile=adobe_rgb_like())
    cmyk_like()        # bytes of a CMYK profile, for a CMYK JPEG
"""

from __future__ import annotations

import itertools
import struct

D50 = (0.9642, 1.0, 0.8249)  # the profile connection space's white
# Adobe RGB (1998)'s primaries adapted to D50, as its own profile writes them; gamma 563/256
ADOBE_PRIMARIES = ((0.6097, 0.3111, 0.0195), (0.2053, 0.6257, 0.0609), (0.1492, 0.0632, 0.7446))
ADOBE_GAMMA = 563


def _s15(value: float) -> bytes:
    return struct.pack(">i", round(value * 65536))


def _xyz(xyz: tuple[float, float, float]) -> bytes:
    return b"XYZ " + bytes(4) + b"".join(_s15(v) for v in xyz)


def _desc(text: str) -> bytes:
    ascii_ = text.encode("ascii") + b"\0"
    return b"desc" + bytes(4) + struct.pack(">I", len(ascii_)) + ascii_ + bytes(4 + 4 + 2 + 1 + 67)


def _text(text: str) -> bytes:
    return b"text" + bytes(4) + text.encode("ascii") + b"\0"


def _curve(gamma_256ths: int) -> bytes:
    return b"curv" + bytes(4) + struct.pack(">IH", 1, gamma_256ths)


def _profile(device_class: bytes, space: bytes, pcs: bytes, tags: list[tuple[bytes, bytes]]) -> bytes:
    """A whole profile of `tags` ((signature, data) pairs) after a version 2.1 header."""
    table_end = 128 + 4 + 12 * len(tags)
    table, body, offset = [], b"", table_end
    for signature, data in tags:
        table.append(struct.pack(">4sII", signature, offset + len(body), len(data)))
        body += data + bytes(-len(data) % 4)
    size = table_end + len(body)
    header = (struct.pack(">I4sI4s4s4s", size, b"lcms", 0x02100000, device_class, space, pcs) + bytes(12) + b"acsp"
              + bytes(4 + 4 + 4 + 4 + 8) + struct.pack(">I", 0) + b"".join(_s15(v) for v in D50) + bytes(4 + 16 + 28))  # fmt: skip
    assert len(header) == 128
    return header + struct.pack(">I", len(tags)) + b"".join(table) + body


def adobe_rgb_like() -> bytes:
    """An RGB display profile with Adobe RGB (1998)'s D50-adapted primaries and gamma 2.2."""
    tags = [(b"desc", _desc("Adobe RGB (1998)-like, for tests")), (b"cprt", _text("public domain")), (b"wtpt", _xyz(D50))]
    tags += [(name, _xyz(primary)) for name, primary in zip((b"rXYZ", b"gXYZ", b"bXYZ"), ADOBE_PRIMARIES)]
    tags += [(name, _curve(ADOBE_GAMMA)) for name in (b"rTRC", b"gTRC", b"bTRC")]
    return _profile(b"mntr", b"RGB ", b"XYZ ", tags)


def _cmyk_lab(c: int, m: int, y: int, k: int) -> tuple[int, int, int]:
    """A made-up CIELAB colour of ink corner (c, m, y, k) (each 0 or 1), as lut8 encodes it:
    L* 0..100 as 0..255, a* and b* plus 128."""
    lightness = 100 * (1 - 0.45 * c) * (1 - 0.5 * m) * (1 - 0.1 * y) * (1 - 0.85 * k)
    a = (-35 * c + 70 * m - 5 * y) * (1 - k)
    b = (-45 * c - 10 * m + 85 * y) * (1 - k)
    return round(lightness * 255 / 100), round(a + 128), round(b + 128)


def cmyk_like() -> bytes:
    """A CMYK output profile whose A2B0 (ink to CIELAB) is a lut8 of 2 points a channel."""
    identity = bytes(range(256))
    matrix = b"".join(_s15(1.0 if i == j else 0.0) for i in range(3) for j in range(3))
    clut = b"".join(bytes(_cmyk_lab(*corner)) for corner in itertools.product((0, 1), repeat=4))  # the first input slowest
    lut = b"mft1" + bytes(4) + bytes([4, 3, 2, 0]) + matrix + identity * 4 + clut + identity * 3
    tags = [(b"desc", _desc("CMYK-like, for tests")), (b"cprt", _text("public domain")), (b"wtpt", _xyz(D50)), (b"A2B0", lut)]
    return _profile(b"prtr", b"CMYK", b"Lab ", tags)


def grey_gamma(gamma: float = 1.8) -> bytes:
    """A grey display profile with a pure power curve of `gamma` (Apple's old "Gray Gamma 1.8")."""
    tags = [(b"desc", _desc(f"Gray Gamma {gamma:g}, for tests")), (b"cprt", _text("public domain")), (b"wtpt", _xyz(D50)),
            (b"kTRC", _curve(round(gamma * 256)))]  # fmt: skip
    return _profile(b"mntr", b"GRAY", b"XYZ ", tags)
