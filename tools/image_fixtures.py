"""Small image files for the decoding checks in tests/test_maps.c (test_untrusted).

    /usr/bin/python3 tools/image_fixtures.py [--out tests/fixtures/maps/images] [--regressions fuzz/regressions]

One 16x12 RGB pattern, written by PIL in every format vit.h reads and in
two it refuses, plus damaged copies. PIL is the ground truth: each damaged
file is checked here to be one PIL refuses (or, for the short palette and
the low max value, the decoded pixels are written beside it as a PPM).
JPEG bytes depend on the libjpeg PIL uses, so there is no --check: the
committed files are the reference, this script says how they were made.

src.png src.bmp src.ppm    the pattern, lossless (decode to the same pixels)
src.pgm                    PIL's convert("L") of it
base.jpg prog.jpg          baseline and progressive JPEG, quality 90
src.tga src.gif            formats vit.h does not read
pal_short.png              palette PNG with 2 colours and indices up to 200;
pal_short.want.ppm         PIL's convert("RGB") of it (index k past the
                           palette is grey k)
max100.ppm                 P6 with max value 100; max100.want.ppm: PIL's pixels
prog_undef_dc.jpg          prog.jpg whose first scan names DC Huffman table 3
prog_undef_ac.jpg          prog.jpg whose first AC scan names AC table 2
base_undef_ac.jpg          base.jpg whose scan names AC table 3
base_undef_dqt.jpg         base.jpg whose first component names quantisation table 3
prog_refine_first.jpg      prog.jpg whose first (DC) scan is a refinement: before any DC scan
wide.png                   9000000x1 grey, 8.8 KB (preprocessing must refuse it clearly)

--regressions also writes each format cut to 90% (PIL refuses every one
but the PNG, cut inside IEND) and the damaged JPEGs into the fuzzers'
regression folder, each after the byte 0x01 that makes fuzz/fuzz_image.c
decode it as RGB.
"""
import argparse
import io
import os
import struct
import sys
import zlib

from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))


def pattern():
    im = Image.new("RGB", (16, 12))
    px = im.load()
    for y in range(12):
        for x in range(16):
            px[x, y] = ((x * 16) % 256, (y * 21) % 256, ((x + y) * 9) % 256)
    return im


def encode(im, fmt, **kw):
    buf = io.BytesIO()
    im.save(buf, fmt, **kw)
    return buf.getvalue()


def segments(jpg):
    """(marker, offset) of each JPEG segment, scans' coded data skipped."""
    out, i = [], 2
    while i < len(jpg):
        m = jpg[i + 1]
        out.append((m, i))
        if m == 0xD9:
            break
        i += 2 + (jpg[i + 2] << 8 | jpg[i + 3])
        if m == 0xDA:
            while not (jpg[i] == 0xFF and jpg[i + 1] != 0 and not 0xD0 <= jpg[i + 1] <= 0xD7):
                i += 1
    return out


def patched(jpg, marker, nth, offset, value):
    at = [o for m, o in segments(jpg) if m == marker][nth]
    b = bytearray(jpg)
    b[at + offset] = value
    return bytes(b)


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def refused(data):
    try:
        Image.open(io.BytesIO(data)).load()
    except Exception:  # PIL raises OSError, ValueError or SyntaxError
        return True
    return False


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=os.path.join(HERE, "..", "tests", "fixtures", "maps", "images"))
    p.add_argument("--regressions", help="also write the damaged files here (fuzz/regressions)")
    args = p.parse_args(argv)
    im = pattern()
    files = {
        "src.png": encode(im, "PNG"), "src.bmp": encode(im, "BMP"), "src.ppm": encode(im, "PPM"),
        "src.pgm": encode(im.convert("L"), "PPM"), "base.jpg": encode(im, "JPEG", quality=90),
        "prog.jpg": encode(im, "JPEG", quality=90, progressive=True), "src.tga": encode(im, "TGA"), "src.gif": encode(im, "GIF"),
    }
    raw = b"".join(b"\x00" + bytes([0, 1, 5, 200]) for _ in range(2))
    files["pal_short.png"] = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 4, 2, 8, 3, 0, 0, 0)) +
                              chunk(b"PLTE", bytes([255, 0, 0, 0, 255, 0])) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    files["pal_short.want.ppm"] = encode(Image.open(io.BytesIO(files["pal_short.png"])).convert("RGB"), "PPM")
    files["wide.png"] = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 9000000, 1, 8, 0, 0, 0, 0)) +
                         chunk(b"IDAT", zlib.compress(bytes(9000001), 9)) + chunk(b"IEND", b""))
    files["max100.ppm"] = b"P6\n3 2\n100\n" + bytes([0, 1, 50, 99, 100, 101, 7, 33, 66, 2, 3, 4, 5, 6, 8, 9, 10, 11])
    files["max100.want.ppm"] = encode(Image.open(io.BytesIO(files["max100.ppm"])).convert("RGB"), "PPM")
    damaged = {
        "prog_undef_dc.jpg": patched(files["prog.jpg"], 0xDA, 0, 8, 0x30),  # component 2: DC table 3
        "prog_undef_ac.jpg": patched(files["prog.jpg"], 0xDA, 1, 6, 0x02),  # AC table 2
        "base_undef_ac.jpg": patched(files["base.jpg"], 0xDA, 0, 6, 0x03),  # component 1: AC table 3
        "base_undef_dqt.jpg": patched(files["base.jpg"], 0xC0, 0, 12, 3),   # component 1: quantisation table 3
        "prog_refine_first.jpg": patched(files["prog.jpg"], 0xDA, 0, 13, 0x11),  # 3 components: Ah/Al at 7 + 2 * 3
    }
    for name, data in damaged.items():
        if not refused(data):
            sys.exit(f"image_fixtures.py: PIL decodes {name}; it was meant to be damaged")
    files.update(damaged)
    os.makedirs(args.out, exist_ok=True)
    for name, data in sorted(files.items()):
        with open(os.path.join(args.out, name), "wb") as f:
            f.write(data)
    print(f"wrote {len(files)} files to {args.out}")
    if args.regressions:
        out = dict(damaged, **{"wide.png": files["wide.png"]})
        for name in ("src.png", "src.bmp", "src.ppm", "src.pgm", "base.jpg", "prog.jpg", "src.tga", "src.gif"):
            cut = files[name][: len(files[name]) * 9 // 10]
            if name != "src.png" and not refused(cut):  # PIL takes a PNG cut inside IEND; vit.h does not
                sys.exit(f"image_fixtures.py: PIL decodes {name} cut to 90%")
            out["cut90-" + name.replace(".", "-")] = cut
        for name, data in out.items():
            with open(os.path.join(args.regressions, "image-" + name.replace(".", "-")), "wb") as f:
                f.write(b"\x01" + data)
        print(f"wrote {len(out)} files to {args.regressions}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
