"""vit.h against PyTorch on the same weights, in one run, alternating.

    build/venv/bin/python bench/compare.py [--quick] [--reps R] [--rounds K]

For each model (ViT-Ti/16, ViT-S/16, ViT-B/16 with random weights exported by
tools/export.py), batch size (1, 8) and thread count (1, 2) it runs
build/bench_vit and bench/bench_torch.py alternately K times (so machine
noise hits both alike), keeps each side's best median latency, and prints a
Markdown table of latencies, their ratio, peak RSS and load time (vit.h's
split into mapping the file and vit_model_pack, which bench_vit calls as a
program that runs a model more than once would). It also
times one whole `build/vit run` invocation on ViT-B/16 (load, forward,
write) against PyTorch's forward pass alone. Ratios are what to read: this
machine is shared and noisy, so absolute times move between runs.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable
MODELS = {
    "ViT-Ti/16": "torchvision:VisionTransformer:image_size=224,patch_size=16,num_layers=12,num_heads=3,hidden_dim=192,mlp_dim=768,num_classes=1000",
    "ViT-S/16": "torchvision:VisionTransformer:image_size=224,patch_size=16,num_layers=12,num_heads=6,hidden_dim=384,mlp_dim=1536,num_classes=1000",
    "ViT-B/16": "torchvision:vit_b_16",
}


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def export(spec, path):
    if not os.path.exists(path):
        subprocess.run([PY, "tools/export.py", spec, path, "--seed", "0"], check=True, cwd=ROOT, capture_output=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="ViT-B/16 only, B=1")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    os.makedirs(os.path.join(ROOT, "build", "bench"), exist_ok=True)
    rows = []
    models = {"ViT-B/16": MODELS["ViT-B/16"]} if args.quick else MODELS
    for name, spec in models.items():
        path = os.path.join("build", "bench", name.replace("/", "_") + ".safetensors")
        export(spec, os.path.join(ROOT, path))
        for batch in (1,) if args.quick else (1, 8):
            for threads in (1, 2):
                best = {}
                for _ in range(args.rounds):
                    common = ["--batch", str(batch), "--threads", str(threads), "--reps", str(args.reps), "--json"]
                    for impl, cmd in (("vit.h", ["build/bench_vit", path] + common),
                                      ("torch", [PY, "bench/bench_torch.py", path] + common)):
                        r = run_json(cmd)
                        if impl not in best or r["median_s"] < best[impl]["median_s"]:
                            best[impl] = r
                v, t = best["vit.h"], best["torch"]
                rows.append((name, batch, threads, v, t))
                print(f"{name} B={batch} T={threads}: vit.h {v['median_s']:.4f} s, PyTorch {t['median_s']:.4f} s "
                      f"({t.get('setting', '')}), ratio {v['median_s'] / t['median_s']:.2f}", file=sys.stderr)
    print("| model | B | threads | vit.h (s) | PyTorch (s) | vit.h / PyTorch | vit.h peak RSS (MB) | weights (MB) | vit.h load + pack (s) | PyTorch load (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, batch, threads, v, t in rows:
        size = os.path.getsize(os.path.join(ROOT, "build", "bench", name.replace("/", "_") + ".safetensors")) / 2**20
        print(f"| {name} | {batch} | {threads} | {v['median_s']:.4f} | {t['median_s']:.4f} | **{v['median_s'] / t['median_s']:.2f}** | "
              f"{v['peak_rss_mb']:.0f} ({v['peak_rss_mb'] / size:.2f}x) | {size:.0f} | {v['load_s']:.3f} + {v['pack_s']:.3f} | {t['load_s']:.3f} |")
    # One whole CLI invocation on ViT-B/16 against PyTorch's forward alone.
    path = os.path.join("build", "bench", "ViT-B_16.safetensors")
    with tempfile.TemporaryDirectory() as tmp:
        x = np.random.default_rng(0).standard_normal((1, 3, 224, 224), dtype=np.float32)
        np.save(os.path.join(tmp, "in.npy"), x)
        cli = []
        for _ in range(3):
            t0 = time.perf_counter()
            subprocess.run(["build/vit", "run", path, os.path.join(tmp, "in.npy"), os.path.join(tmp, "out.npy"), "--threads", "2"],
                           check=True, cwd=ROOT)
            cli.append(time.perf_counter() - t0)
        torch_fwd = run_json([PY, "bench/bench_torch.py", path, "--batch", "1", "--threads", "2", "--reps", str(args.reps), "--json"])
        print(f"\nWhole `build/vit run` on ViT-B/16 (load + forward + write, 2 threads): {min(cli):.3f} s; "
              f"PyTorch forward alone: {torch_fwd['median_s']:.3f} s; ratio **{min(cli) / torch_fwd['median_s']:.2f}**")


if __name__ == "__main__":
    main()
