"""vit.h against PyTorch on the same weights, in one run, alternating.

    build/venv/bin/python bench/compare.py [--quick] [--reps R] [--rounds K]
    build/venv/bin/python bench/compare.py --modules [--min-time S] [--rounds K] [--only NAME,...]
    build/venv/bin/python bench/compare.py --peers [--models M,...] [--quick] [--reps R] [--rounds K] [--vit-dtypes F32,...]
        [--no-busy] [--profiles]

For each model (ViT-Ti/16, ViT-S/16, ViT-B/16 with random weights exported by
tools/export.py), batch size (1, 8) and thread count (1, 2) it runs
build/bench_vit and bench/bench_torch.py alternately K times (so machine
noise hits both alike), keeps each side's best median latency, and prints a
Markdown table of latencies, their ratio, peak RSS and load time. It also
times one whole `build/vit run` invocation on ViT-B/16 (load, forward,
write) against PyTorch's forward pass alone. Ratios are what to read: this
machine is shared and noisy, so absolute times move between runs. A
build/bench_vit (or, with --profiles, build/profile_vit) older than vit.h
or its source is refused: `make bench` builds them, this script does not.

--modules does the same for every attention module from the seeds (and
sdpa, the MHA layouts, MLPs, encoder blocks, patch embedding) on the
shapes the seeds' example usage and papers use (MODULES below), at B = 1
and 8, 1 and 2 threads. Each module is exported once with random weights
(tools/export.py, seed 0; kept in build/bench/modules under a name that
hashes its spec) and both sides run on the same .npy input. vit.h runs in
a fresh build/bench_vit process per measurement; PyTorch in long-lived
bench/bench_torch.py --serve processes (torch imported once), one per
thread setting, the better of the two settings counting at 2 threads as
bench_torch.py's `auto` does. Each measurement runs at least --reps passes
and --min-time seconds (modules take microseconds to tens of
milliseconds), the median counts, and the best median of --rounds
alternations (vit.h first in odd rounds, PyTorch first in even ones).
Before each measurement it waits (up to --max-wait seconds in all) until
no other process keeps a core busy (see Quiet); rows measured while the
machine stayed busy are marked (busy).

--peers runs whole ViTs (--models, default ViT-B/16; also DINOv2-S/14,
timm's vit_small_patch14_dinov2 at 224 px and at 518 px (DINOv2-S/14@518,
1,370 tokens), CLIP-B/16 (timm's vit_base_patch16_clip_224), EVA-02-B/14
(timm's eva02_base_patch14_224) and DINOv3-S/16 (timm's
vit_small_patch16_dinov3, 256 px); PEER_MODELS), each with random weights
(tools/export.py SPEC --seed 0, which re-draws every parameter, layer-scale
gammas and tokens included), in every engine a user would pick for CPU
inference, in one run: vit.h (build/bench_vit, one row per --vit-dtypes
file; BF16 and I8 by tools/export.py --from the F32 file), ONNX Runtime
f32 and int8 (its dynamic quantisation), OpenVINO with
INFERENCE_PRECISION_HINT f32 and bf16, and OpenVINO int8 (NNCF's
post-training quantisation, calibrated once; bench/bench_peers.py in
build/bench-venv runs them, on the ONNX export bench_torch.py --onnx makes
of the very same weights), and PyTorch (bench_torch.py, its best
threading; timm's files hold no vit.h metadata, so it builds timm's model
from the spec, bench_torch.py --spec, and loads the file's tensors into
it). Each model's files live in build/bench/<name>/ (model.safetensors,
timm's config.json beside it, model.onnx, the int8 models, the inputs,
...), made when missing. The input is random-normal (seed 0) of the shape
`vit input-shape` reads from the file. For B = 1 and 8 and 1 and 2
threads, the engines of each precision (vit.h's row and the peers its
target names) are loaded side by side, a process each (--stepped), and
after a warm-up their passes alternate one by one on the same input,
--reps passes of each a round, in an order that rotates by one each
round (1-thread runs of every engine on the same core: cpus_for); the
table shows the median over --rounds rounds of each round's median,
with each engine's relative L2 distance to PyTorch's output at B = 1.
(Runs of --reps passes back to back, engine after engine, as PyTorch's
row still runs, let a neighbour's burst of a few seconds land on one
engine's run and not on the other's.) Under the table, for every (B, threads) cell, vit.h's
time over the faster peer of each precision against the speed issue's
targets (TARGETS; int8 with each int8 engine's relative L2 to PyTorch at
that B), and vit.h f32's GFLOP/s (model_flops) and share of the FMA peak
(build/bench_kernels --peak, one core's, times the threads). With
--profiles, where one pass at B = 1 on one thread goes, each precision:
vit.h's pieces (build/profile_vit) and OpenVINO's operations with their
kernels (bench_peers.py --profile, its performance counters), on the
same core one after the other, so that a missed cell comes with the
pieces it loses in; and the same pair at the B and threads of each cell
this run missed past B = 1 on one thread. Then, unless --no-busy, the busy-core rows: another process spins on one core (pinned
to the last CPU) while each engine's 1- and 2-thread runs alternate, B =
1 and 8; a thread pool that spins at its barriers loses there, one that
sleeps does not. The models run one after the other, each with its
tables. Tables print in the README's format, with the command and what
the CPU offers (OpenVINO runs bf16 as f32 where the CPU has no bf16: the
`ran` column says what it ran).

Every table is printed and also written into docs/BENCHMARKS.md (--out;
`--out -` only prints), between the markers of this run's kind
(<!-- compare.py KEY: begin --> and <!-- compare.py KEY: end -->, KEY
being "whole ViTs", "--modules" or "--peers --models M,..."), so `make
bench` rewrites that file's tables and leaves its text. A --quick or
--only run prints alone unless --out names a file.
"""

import argparse
import contextlib
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable
PEERS_PY = os.path.join("build", "bench-venv", "bin", "python")  # tools/install_deps.sh bench makes it
# --vit-dtypes (tools/export.py --dtype; I8A7: I8 with --activation-bits 7) -> the table's name
PRECISION = {"F32": "f32", "BF16": "bf16", "I8": "int8", "I8A7": "int8, x on 7 bits,"}
MODELS = {
    "ViT-Ti/16": "torchvision:VisionTransformer:image_size=224,patch_size=16,num_layers=12,num_heads=3,hidden_dim=192,mlp_dim=768,num_classes=1000",
    "ViT-S/16": "torchvision:VisionTransformer:image_size=224,patch_size=16,num_layers=12,num_heads=6,hidden_dim=384,mlp_dim=1536,num_classes=1000",
    "ViT-B/16": "torchvision:vit_b_16",
}
# --peers --models: name -> tools/export.py spec (timm's in timm's names with its config.json). The image size is the
# one vit.h reads from the file (`vit input-shape`): 224 px but where the spec or timm's default says otherwise.
PEER_MODELS = {
    "ViT-B/16": MODELS["ViT-B/16"],
    "DINOv2-S/14": "timm:vit_small_patch14_dinov2:img_size=224",
    "CLIP-B/16": "timm:vit_base_patch16_clip_224",
    "DINOv2-S/14@518": "timm:vit_small_patch14_dinov2:img_size=518",  # 1,370 tokens: attention's share grows
    "EVA-02-B/14": "timm:eva02_base_patch14_224",  # rotary embeddings, SwiGLU with a LayerNorm inside
    "DINOv3-S/16": "timm:vit_small_patch16_dinov3",  # 256 px, 4 register tokens, DINOv3's rotary embeddings
}
PEER_DEFAULT = "ViT-B/16"
# The speed issue's targets: vit.h's time over the faster peer of its precision, at most this.
TARGETS = {"f32": 0.97, "bf16": 0.95, "int8": 0.90}
GAP = 0.05  # seconds between two stepped passes (compare.py --peers): a pool spinning after its pass goes to sleep


# name -> (spec for tools/export.py, input shape at batch B given as a function of B, why these sizes).
MODULES = [
    ("SE r16 (seed 000)", "reference:seed000.SqueezeExcitation:in_channels=512,squeeze_channels=32",
     lambda b: (b, 512, 7, 7), "C 512 at 7x7 (a ResNet-50 last stage), reduction 16 as in the paper"),
    ("SE r1 (seed 000)", "reference:seed000.SqueezeExcitation:in_channels=512",
     lambda b: (b, 512, 7, 7), "the seed's default: squeeze_channels = in_channels"),
    ("ScaledDotSelfAttention (seed 002)", "reference:seed002.ScaledDotSelfAttention:n_embd=49",
     lambda b: (b, 16, 49), "MNIST as 16 patches of 7x7"),
    ("attention classifier (seed 002)", "reference:seed002.Model:n_embd=49,seq_len=16",
     lambda b: (b, 16, 49), "MNIST as 16 patches of 7x7"),
    ("MLP 784-784-10 (seed 002)", "reference:seed002.MLP", lambda b: (b, 784), "MNIST pixels"),
    ("EMSA ratio 1 (seed 003)", "reference:seed003.EMSA:d_model=512,d_k=64,d_v=64,h=8,H=7,W=7,ratio=1,apply_transform=False",
     lambda b: (b, 49, 512), "ResT's last stage: 7x7 tokens, 512 wide, 8 heads of 64"),
    ("EMSA ratio 2 (seed 003)", "reference:seed003.EMSA:d_model=512,d_k=64,d_v=64,h=8,H=7,W=7,ratio=2,apply_transform=False",
     lambda b: (b, 49, 512), "keys and values from a 4x4 grid"),
    ("EMSA ratio 2 + transform (seed 003)", "reference:seed003.EMSA:d_model=512,d_k=64,d_v=64,h=8,H=7,W=7,ratio=2,apply_transform=True",
     lambda b: (b, 49, 512), "as above, with the 1x1 conv + softmax + InstanceNorm transform"),
    ("ShuffleAttention (seed 003)", "reference:seed003.ShuffleAttention:channel=512,G=8",
     lambda b: (b, 512, 7, 7), "the seed's defaults, C 512 at 7x7"),
    ("SpatialGroupEnhance (seed 003)", "reference:seed003.SpatialGroupEnhance:groups=8",
     lambda b: (b, 512, 7, 7), "8 groups, C 512 at 7x7"),
    ("AFTFull (seed 003)", "reference:seed003.AFTFull:max_seqlen=49,dim=512,hidden_dim=64",
     lambda b: (b, 49, 512), "T 49, D 512, the seed's hidden_dim 64"),
    ("AFTSimple (seed 003)", "reference:seed003.AFTSimple:max_seqlen=49,dim=512,hidden_dim=64",
     lambda b: (b, 49, 512), "T 49, D 512, hidden_dim 64"),
    ("AFTLocal s=7 (seed 003)", "reference:seed003.AFTLocal:max_seqlen=49,dim=512,hidden_dim=64,s=7",
     lambda b: (b, 49, 512), "T 49, D 512, hidden_dim 64, window 7 (the seed's s=256 would be AFTFull)"),
    ("OutlookAttention stride 1 (seed 003)", "reference:seed003.OutlookAttention:dim=192,num_heads=6,kernel_size=3,padding=1,stride=1",
     lambda b: (b, 28, 28, 192), "VOLO-D1 stage 1: 28x28x192, 6 heads, 3x3"),
    ("OutlookAttention stride 2 (seed 003)", "reference:seed003.OutlookAttention:dim=192,num_heads=6,kernel_size=3,padding=1,stride=2",
     lambda b: (b, 28, 28, 192), "as above, attention from the 14x14 pooled grid"),
    ("sdpa attention(x, x, x) (seed 000)", "reference:seed000.SDPA", lambda b: (b, 197, 64), "one ViT-B/16 head: 197 tokens of 64"),
    ("nn.MultiheadAttention", "nn:MultiheadAttention:embed_dim=768,num_heads=12,batch_first=True",
     lambda b: (b, 197, 768), "ViT-B/16's attention"),
    ("MultiHeadedAttention (seed 000)", "reference:seed000.MultiHeadedAttention:heads=12,d_model=768",
     lambda b: (b, 197, 768), "ViT-B/16 sizes, separate q/k/v"),
    ("MultiHeadAttention (seed 004)", "reference:seed004.MultiHeadAttention:emb_size=768,num_heads=12",
     lambda b: (b, 197, 768), "ViT-B/16 sizes, fused qkv, q/k/v fastest"),
    ("MLPBlock GELU (torchvision)", "torchvision:MLPBlock:in_dim=768,mlp_dim=3072,dropout=0.0",
     lambda b: (b, 197, 768), "ViT-B/16's MLP"),
    ("MLP ReLU (seed 001)", "reference:seed001.MLP:token_dim=768,mlp_dim=3072", lambda b: (b, 197, 768), "ViT-B/16 sizes"),
    ("EncoderBlock (torchvision)", "torchvision:EncoderBlock:num_heads=12,hidden_dim=768,mlp_dim=3072,dropout=0.0,attention_dropout=0.0",
     lambda b: (b, 197, 768), "one ViT-B/16 layer"),
    ("TransformerEncoderBlock (seed 004)", "reference:seed004.TransformerEncoderBlock:emb_size=768,num_heads=12",
     lambda b: (b, 197, 768), "one ViT-B/16 layer, seed 004's attention"),
    ("PatchifyLayer (seed 000)", "reference:seed000.PatchifyLayer:image_size=224,patch_size=16,hidden_dim=768",
     lambda b: (b, 3, 224, 224), "ViT-B/16's patch embedding"),
]


ALL_CPUS = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


@contextlib.contextmanager
def cpus_for(threads):
    """The engines' processes (children inherit it) on the first CPU this one may use for 1-thread runs, on all
    of them otherwise. OpenVINO pins its one thread to a core itself; an unpinned engine landed on either, and
    this machine's two cores differed by up to 2x while a neighbour loaded one (vit.h BF16, DINOv2-S/14 at 518
    px, one thread: 0.21 s on CPU 0, 0.35-0.41 s on CPU 1, minutes apart), so 1-thread cells compared cores, not
    engines."""
    if threads != 1 or len(ALL_CPUS) < 2:
        yield
        return
    os.sched_setaffinity(0, {ALL_CPUS[0]})
    try:
        yield
    finally:
        os.sched_setaffinity(0, set(ALL_CPUS))


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def busy_cpus(seconds=0.25):
    """Fraction of all CPUs busy over `seconds` (/proc/stat) while this bench sits idle: other people's work."""
    def sample():
        with open("/proc/stat") as f:
            v = [int(t) for t in f.readline().split()[1:]]
        return sum(v), v[3] + v[4]  # total, idle + iowait

    try:
        t0, i0 = sample()
        time.sleep(seconds)
        t1, i1 = sample()
    except OSError:
        return 0.0
    return 1.0 - (i1 - i0) / max(1, t1 - t0)


class Quiet:
    """Waits, before each measurement, until no other process keeps a core busy, within a total budget.

    When another process holds one of the cores, a 2-thread measurement
    says more about that process and the engines' thread pools than about
    the kernels (PyTorch's libgomp spins for milliseconds at every barrier;
    so did vit.h's before it had its own pool: one SE pass took 24 ms
    instead of 0.04 ms); --peers measures that case on purpose, in its
    busy-core table. Rows measured while the machine stayed busy are flagged
    in the table.
    """

    def __init__(self, budget_s, threshold=0.2):
        self.budget, self.threshold, self.waited = budget_s, threshold, 0.0

    def wait(self):
        """The busy fraction when measuring starts (after waiting, if the budget allows)."""
        busy = busy_cpus()
        while busy > self.threshold and self.waited < self.budget:
            time.sleep(1.0)
            self.waited += 1.25
            busy = busy_cpus()
        return busy


def export(spec, path):
    if not os.path.exists(path):
        subprocess.run([PY, "tools/export.py", spec, path, "--seed", "0"], check=True, cwd=ROOT, capture_output=True)


class TorchServer:
    """One bench_torch.py --serve process: fixed threads and setting, modules kept loaded."""

    def __init__(self, threads, setting):
        self.threads, self.setting = threads, setting
        self.proc = subprocess.Popen([PY, "bench/bench_torch.py", "--serve", "--threads", str(threads), "--setting", setting],
                                     cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def measure(self, **req):
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            sys.exit(f"compare.py: bench_torch.py --serve ({self.setting}, {self.threads} threads) exited")
        r = json.loads(line)
        if "error" in r:
            sys.exit(f"compare.py: PyTorch failed on {req['model']}: {r['error']}")
        return r

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def module_files(entries):
    """{name: path} of exported modules, exporting (in one process) those not yet in build/bench/modules."""
    paths, todo = {}, []
    for name, spec, _, _ in entries:
        tag = hashlib.sha1(spec.encode()).hexdigest()[:10]
        path = os.path.join("build", "bench", "modules", f"{spec.split(':')[1].split('.')[-1]}-{tag}.safetensors")
        paths[name] = path
        if not os.path.exists(os.path.join(ROOT, path)):
            todo.append((spec, path))
    if todo:
        print(f"exporting {len(todo)} module(s) with tools/export.py", file=sys.stderr)
        code = ("import sys; sys.path.insert(0, 'tools'); import export\n"
                "for spec, path in " + repr(todo) + ":\n"
                "    export.main([spec, path, '--seed', '0'])\n")
        subprocess.run([PY, "-c", code], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return paths


def modules(args):
    entries = [e for e in MODULES if not args.only or any(o.lower() in e[0].lower() for o in args.only.split(","))]
    if not entries:
        sys.exit(f"compare.py: --only {args.only!r} matches no module")
    os.makedirs(os.path.join(ROOT, "build", "bench", "modules"), exist_ok=True)
    paths = module_files(entries)
    servers = {1: [TorchServer(1, "openblas")], 2: [TorchServer(2, "openblas"), TorchServer(2, "omp")]}
    rows, quiet = [], Quiet(args.max_wait)
    try:
        for name, spec, shape, _ in entries:
            for batch in (1, 8):
                x = np.random.default_rng(batch).standard_normal(shape(batch), dtype=np.float32)
                inp = os.path.join("build", "bench", "modules", f"in-{'x'.join(map(str, x.shape))}.npy")
                np.save(os.path.join(ROOT, inp), x)
                for threads in (1, 2):
                    best, busy = {}, 0.0
                    for rnd in range(args.rounds):
                        def vit():
                            return run_json(["build/bench_vit", paths[name], "--input", inp, "--threads", str(threads),
                                             "--reps", str(args.reps), "--min-time", str(args.min_time), "--json"])

                        def torch():
                            runs = [s.measure(model=paths[name], input=inp, reps=args.reps, warmup=2, min_time=args.min_time)
                                    for s in servers[threads]]
                            return min(runs, key=lambda r: r["median_s"])
                        order = (("vit.h", vit), ("torch", torch)) if rnd % 2 == 0 else (("torch", torch), ("vit.h", vit))
                        for impl, fn in order:
                            busy = max(busy, quiet.wait())
                            r = fn()
                            if impl not in best or r["median_s"] < best[impl]["median_s"]:
                                best[impl] = r
                    v, t = best["vit.h"], best["torch"]
                    rows.append((name, list(x.shape), batch, threads, v, t, busy > quiet.threshold))
                    print(f"{name} B={batch} T={threads}: vit.h {v['median_s'] * 1e3:.4f} ms ({v['reps']} reps), "
                          f"PyTorch {t['median_s'] * 1e3:.4f} ms ({t['setting']}, {t['reps']} reps), "
                          f"ratio {v['median_s'] / t['median_s']:.2f}{f' (cores {busy:.0%} busy with other work)' if busy > quiet.threshold else ''}",
                          file=sys.stderr)
    finally:
        for group in servers.values():
            for s in group:
                s.close()
    print("| module | input | threads | vit.h (ms) | PyTorch (ms) | vit.h / PyTorch |")
    print("|---|---|---|---|---|---|")
    for name, shape, batch, threads, v, t, busy in rows:
        ratio = v["median_s"] / t["median_s"]
        print(f"| {name} | {tuple(shape)} | {threads} | {v['median_s'] * 1e3:.4g} | {t['median_s'] * 1e3:.4g} | "
              f"{'**' if ratio < 1 else ''}{ratio:.2f}{'**' if ratio < 1 else ''}{' (busy)' if busy else ''} |")
    # The same, one line per module: latencies at B = 1, 1 thread, and the four ratios.
    print("\n| module | input (B = 1) | vit.h (ms, B=1, 1 thread) | PyTorch (ms, B=1, 1 thread) | B=1, 1 thread | B=1, 2 threads | B=8, 1 thread | B=8, 2 threads |")
    print("|---|---|---|---|---|---|---|---|")
    for name, _, _, _ in entries:
        mine = {(b, th): (shape, v, t, busy) for n, shape, b, th, v, t, busy in rows if n == name}
        shape, v, t, _ = mine[(1, 1)]
        cells = []
        for key in ((1, 1), (1, 2), (8, 1), (8, 2)):
            _, v2, t2, busy = mine[key]
            ratio = v2["median_s"] / t2["median_s"]
            cells.append(f"{'**' if ratio < 1 else ''}{ratio:.2f}{'**' if ratio < 1 else ''}{' (busy)' if busy else ''}")
        print(f"| {name} | {tuple(shape)} | {v['median_s'] * 1e3:.4g} | {t['median_s'] * 1e3:.4g} | " + " | ".join(cells) + " |")
    slower = [(n, b, th, v["median_s"] / t["median_s"]) for n, _, b, th, v, t, _ in rows if v["median_s"] >= t["median_s"]]
    print(f"\nvit.h faster than PyTorch in {len(rows) - len(slower)} of {len(rows)} rows (bold: ratio < 1)."
          + ("" if not slower else " Not faster: " + "; ".join(f"{n} B={b} T={th} ({r:.2f})" for n, b, th, r in slower) + "."))
    flagged = sum(1 for r in rows if r[-1])
    print(f"{flagged} row(s) marked (busy): other processes kept the cores busy during them "
          f"(waited {quiet.waited:.0f} s of a {quiet.budget:.0f} s budget for a quiet machine).")
    print(f"Shapes: " + "; ".join(f"{name}: {why}" for name, _, _, why in entries) + ".")


def cpu_summary():
    """The CPU's model name and the flags that decide the peers' kernels."""
    name, flags = None, set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and name is None:
                    name = line.split(":", 1)[1].strip()
                elif line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    wanted = ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "avx_vnni", "amx_bf16", "amx_int8")
    return f"{name or platform.processor() or 'unknown CPU'}, {os.cpu_count()} CPUs, " + " ".join(f for f in wanted if f in flags)


class Spinner:
    """Another process spinning on one core (pinned to the last CPU) while it is open: the busy-core rows."""

    def __enter__(self):
        cpu = (os.cpu_count() or 1) - 1
        self.proc = subprocess.Popen([sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"])
        time.sleep(0.5)
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()


def peer_files(name, args):
    """(folder, F32 weights, ONNX export) of a --peers model in build/bench/<name>/, made when missing or older than
    what they come from: the weights by tools/export.py SPEC --seed 0 (timm's config.json beside them), the ONNX
    file by bench_torch.py --onnx from PyTorch's module holding those weights, the peers' int8 models (ONNX
    Runtime's, and NNCF's for OpenVINO) by bench_peers.py --prepare, and each --vit-dtypes file but F32 by
    tools/export.py --from the F32 file."""
    spec = PEER_MODELS[name]
    folder = os.path.join("build", "bench", name.replace("/", "_"))
    os.makedirs(os.path.join(ROOT, folder), exist_ok=True)
    model, onnx = os.path.join(folder, "model.safetensors"), os.path.join(folder, "model.onnx")
    export(spec, os.path.join(ROOT, model))

    def stale(path, source):
        return not os.path.exists(os.path.join(ROOT, path)) or os.path.getmtime(os.path.join(ROOT, path)) < os.path.getmtime(
            os.path.join(ROOT, source))

    if stale(onnx, model):
        print(f"exporting {name} to ONNX (bench_torch.py --onnx)", file=sys.stderr)
        subprocess.run([PY, "bench/bench_torch.py", model, "--onnx", onnx] + torch_spec(spec), check=True, cwd=ROOT,
                       stdout=subprocess.DEVNULL)
    if not os.path.exists(os.path.join(ROOT, PEERS_PY)):
        sys.exit(f"compare.py: {PEERS_PY} is missing: run tools/install_deps.sh bench (make bench does)")
    print(f"{name}: the peers' int8 models (bench_peers.py --prepare; NNCF's calibration takes a while once)",
          file=sys.stderr)
    subprocess.run([PEERS_PY, "bench/bench_peers.py", onnx, "--prepare"], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    for dtype in args.vit_dtypes.split(","):
        path = vit_file(folder, dtype)
        if dtype != "F32" and (stale(path, model) or stale(path, "tools/export.py")):  # the tool's format too
            how = ["--dtype", "I8", "--activation-bits", "7"] if dtype == "I8A7" else ["--dtype", dtype]
            subprocess.run([PY, "tools/export.py", "--from", model] + how + [path], check=True, cwd=ROOT,
                           capture_output=True)
    return folder, model, onnx


def vit_engine(dtype):
    """vit.h's row (engine name) for one --vit-dtypes dtype, as the tables and targets name it."""
    return f"vit.h {PRECISION[dtype]} (bench_vit)"


def vit_file(folder, dtype):
    """A --peers model's weights file for vit.h in one --vit-dtypes dtype."""
    return os.path.join(folder, "model.safetensors" if dtype == "F32" else f"model.{dtype.lower()}.safetensors")


def torch_spec(spec):
    """bench_torch.py's arguments for a --peers model: timm's files hold no vit.h metadata, so it builds the spec."""
    return ["--spec", spec] if spec.startswith("timm:") else []


def peer_engines(name, args):
    """(its folder, [(name in the table, function(batch, threads, reps, inp, out) -> result dict)], {name: function
    (threads, inp, out) -> the command that runs it --stepped}, {vit.h's row: what it ran}) for --peers on model
    `name`: every engine runs as a process of its own for R passes, and all but PyTorch also step (bench_vit and
    bench_peers.py --stepped)."""
    folder, model, onnx = peer_files(name, args)

    def common(threads, reps, inp, out):
        return ["--threads", str(threads), "--reps", str(reps), "--input", inp, "--json"] + (["--output", out] if out else [])

    def vit_cmd(path):
        return lambda t, r, inp, out: ["build/bench_vit", path] + common(t, r, inp, out)

    def peer_cmd(engine, precision):
        return lambda t, r, inp, out: ([PEERS_PY, "bench/bench_peers.py", onnx, "--engine", engine, "--precision",
                                        precision] + common(t, r, inp, out))

    cmds = {vit_engine(dtype): vit_cmd(vit_file(folder, dtype)) for dtype in args.vit_dtypes.split(",")}
    ran = {n: "i8 weights, x on 7 bits" if dtype == "I8A7" else f"{dtype.lower()} weights"
           for n, dtype in zip(cmds, args.vit_dtypes.split(","))}
    cmds.update({"ONNX Runtime f32": peer_cmd("ort", "f32"), "ONNX Runtime int8 (dynamic quantisation)": peer_cmd("ort", "int8"),
                 "OpenVINO f32": peer_cmd("ov", "f32"), "OpenVINO bf16": peer_cmd("ov", "bf16"),
                 "OpenVINO int8 (NNCF post-training quantisation)": peer_cmd("ov", "int8")})

    def run_one(n):
        return lambda b, t, r, inp, out: dict(run_json(cmds[n](t, r, inp, out)), **({"ran_precision": ran[n]} if n in ran else {}))

    engines = [(n, run_one(n)) for n in cmds]
    engines.append(("PyTorch (its best threading)", lambda b, t, r, inp, out: run_json(
        [PY, "bench/bench_torch.py", model] + torch_spec(PEER_MODELS[name]) + common(t, r, inp, out))))
    steppers = {n: (lambda c: lambda t, inp, out: c(t, 1, inp, out) + ["--stepped"])(c) for n, c in cmds.items()}
    return folder, engines, steppers, ran


def peers(args):
    names = args.models.split(",")
    unknown = [n for n in names if n not in PEER_MODELS]
    if unknown:
        sys.exit(f"compare.py: --models: no model {', '.join(map(repr, unknown))} (there are {', '.join(PEER_MODELS)})")
    bad = [d for d in args.vit_dtypes.split(",") if d not in PRECISION]
    if bad:
        sys.exit(f"compare.py: --vit-dtypes: no dtype {', '.join(map(repr, bad))} (there are {', '.join(PRECISION)})")
    batches = (1,) if args.quick else (1, 8)
    quiet, start = Quiet(args.max_wait), time.perf_counter()
    for i, name in enumerate(names):
        if i:
            print()
        peer_tables(name, args, batches, quiet)
    models = "" if args.models == PEER_DEFAULT else f" --models {args.models}"
    print(f"\nCommand: build/venv/bin/python bench/compare.py --peers{models} --reps {args.reps} "
          f"--rounds {args.rounds}{' --quick' if args.quick else ''} --vit-dtypes {args.vit_dtypes}"
          f"{' --no-busy' if args.no_busy else ''}{' --profiles' if args.profiles else ''} (make bench runs it)"
          + ("" if args.no_busy else "; bold: 2 threads within 1.1x of 1 thread") + ".")
    print(f"compare.py --peers took {(time.perf_counter() - start) / 60:.1f} min", file=sys.stderr)


def vit_output(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if out.returncode != 0:
        sys.exit(f"compare.py: {' '.join(cmd)}: {out.stderr.strip()}")
    return out.stdout


def peer_inputs(folder, model, batches):
    """{B: .npy path}: random-normal inputs (seed 0) of the shape vit.h reads from the model's file."""
    inputs = {}
    for b in batches:
        shape = tuple(int(v) for v in vit_output(["build/vit", "input-shape", model, str(b)]).split())
        inputs[b] = os.path.join(folder, f"in-{b}.npy")
        np.save(os.path.join(ROOT, inputs[b]), np.random.default_rng(0).standard_normal(shape, dtype=np.float32))
    return inputs


def model_flops(model):
    """FLOPs of one image through a ViT file, counting a multiply-add as two: the patch embedding, every block's
    linear layers (qkv, projection, MLP; SwiGLU's two inputs) and attention's q.k and p.v products, and the head.
    Norms, softmax, activations and rotary embeddings are left out, as a GEMM's FLOP count leaves them.
    The sizes are those `vit info` reads from the file."""
    info = vit_output(["build/vit", "info", model]).splitlines()
    line = next(ln for ln in info if ln.strip().startswith("image_size="))
    c = {k: int(v) for k, v in (kv.split("=", 1) for kv in line.split()) if v.lstrip("-").isdigit()}
    d, m, depth, patch = c["hidden_dim"], c["mlp_dim"], c["num_layers"], c["patch_size"]
    patches = (c["image_size"] // patch) ** 2
    n = patches + c["class_token"] + c["dist_token"] + c["reg_tokens"]
    block = n * d * 3 * d + n * d * d + n * d * m * (2 if c["glu"] else 1) + n * m * d + 2 * n * n * d
    rep = c["representation_size"]
    head = d * rep + (rep or d) * c["num_classes"]
    return 2.0 * (patches * d * c["in_channels"] * patch * patch + depth * block + head)


def fma_peak(quiet):
    """One core's FMA peak in GFLOP/s (build/bench_kernels --peak, the best of three once the machine is quiet),
    or None without it."""
    if not os.path.exists(os.path.join(ROOT, "build", "bench_kernels")):
        return None
    quiet.wait()
    return max(run_json(["build/bench_kernels", "--peak"])["fma_peak_gflops"] for _ in range(3))


def peer_tables(name, args, batches, quiet):
    """--peers on one model: its quiet table, the targets and the FMA peak's share, and (without --no-busy) its
    busy-core table."""
    folder, engines, steppers, ran = peer_engines(name, args)
    model = vit_file(folder, "F32")
    inputs = peer_inputs(folder, model, batches)
    size = np.load(os.path.join(ROOT, inputs[batches[0]]), mmap_mode="r").shape[-1]
    outputs = {(engine, b): os.path.join(folder, f"out-{i}-{b}.npy") for i, (engine, _) in enumerate(engines)
               for b in batches}
    busy_flag = {}

    def rounds(groups, rounds, label, which=engines):
        """{(engine, B, T): [result per round]}. In each round, for each group of (B, T), every engine of `which`
        runs the group's settings back to back, a process each, in an order that rotates by one each round."""
        got = {}
        for rnd in range(rounds):
            order = which[rnd % len(which):] + which[:rnd % len(which)]
            for group in groups:
                for engine, fn in order:
                    for b, t in group:
                        if label == "quiet":
                            busy_flag[(engine, b, t)] = max(busy_flag.get((engine, b, t), 0.0), quiet.wait())
                        out = outputs[(engine, b)] if (t, rnd) == (1, 0) and label == "quiet" else None
                        with cpus_for(t):
                            r = fn(b, t, args.reps, inputs[b], out)
                        got.setdefault((engine, b, t), []).append(r)
                        print(f"{name}, {label}, round {rnd + 1}: {engine} B={b} T={t}: {r['median_s']:.4f} s"
                              + (f" (ran {r['ran_precision']})" if "ran_precision" in r else ""), file=sys.stderr)
        return got

    def med(results):
        return statistics.median(r["median_s"] for r in results)

    def spread(results):
        """The fastest and slowest round: on a shared machine a neighbour's burst lands on some rounds of some
        engines, and the median of a few rounds can sit on either side of it."""
        times = [r["median_s"] for r in results]
        return min(times), max(times)

    def rel_l2(engine, b):
        """Relative L2 distance of an engine's output to PyTorch's (the last engine), at batch b."""
        ref = np.load(os.path.join(ROOT, outputs[(engines[-1][0], b)])).astype(np.float64)
        y = np.load(os.path.join(ROOT, outputs[(engine, b)])).astype(np.float64)
        return float(np.linalg.norm(y - ref) / np.linalg.norm(ref))

    # The targets: vit.h over the faster peer of its precision, each cell.
    targets = [("f32", "vit.h / faster of (ORT f32, OV f32)", "vit.h f32 (bench_vit)",
                ("ONNX Runtime f32", "OpenVINO f32")),
               ("bf16", "vit.h BF16 / OV bf16", "vit.h bf16 (bench_vit)", ("OpenVINO bf16",)),
               ("int8", "vit.h I8 / faster of (ORT int8, OV int8)", "vit.h int8 (bench_vit)",
                ("ONNX Runtime int8 (dynamic quantisation)", "OpenVINO int8 (NNCF post-training quantisation)")),
               ("int8", "vit.h I8, x on 7 bits, / faster of (ORT int8, OV int8)",
                "vit.h int8, x on 7 bits, (bench_vit)",
                ("ONNX Runtime int8 (dynamic quantisation)", "OpenVINO int8 (NNCF post-training quantisation)"))]

    def step_group(group, b, t):
        """{engine: [result per round]} for one precision's engines at (B, T), loaded side by side, one process
        each, and their passes alternating one by one (GAP seconds apart, for the threads that spin after a pass
        to go to sleep), R passes of each a round, the order rotating by one each round."""
        procs, errs, times = {}, {}, {e: [] for e in group}

        def failed(e):
            try:
                procs[e].stdin.close()
                procs[e].wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                procs[e].kill()
            errs[e].seek(0)
            sys.exit(f"compare.py: {e} --stepped: {errs[e].read().decode(errors='replace').strip()}")

        with cpus_for(t):
            for e in group:  # loaded one after the other, each load alone
                out = outputs[(e, b)] if t == 1 else None
                errs[e] = tempfile.TemporaryFile()  # a file, not a pipe: warnings cannot fill it and stall e
                procs[e] = subprocess.Popen(steppers[e](t, inputs[b], out), stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=errs[e], text=True, cwd=ROOT)
                if not any(line.strip() == "ready" for line in procs[e].stdout):
                    failed(e)
            for rnd in range(args.rounds):
                wait = quiet.wait()
                order = group[rnd % len(group):] + group[:rnd % len(group)]
                passes = {e: [] for e in group}
                for _ in range(args.reps):
                    for e in order:
                        time.sleep(GAP)
                        procs[e].stdin.write("\n")
                        procs[e].stdin.flush()
                        line = procs[e].stdout.readline()
                        if not line.strip():
                            failed(e)
                        passes[e].append(float(line))
                for e in group:
                    busy_flag[(e, b, t)] = max(busy_flag.get((e, b, t), 0.0), wait)
                    times[e].append(passes[e])
                    print(f"{name}, quiet, round {rnd + 1}: {e} B={b} T={t}: "
                          f"{statistics.median(passes[e]):.4f} s (stepped)", file=sys.stderr)
        got = {}
        for e in group:
            text = procs[e].communicate()[0]
            if procs[e].returncode != 0:
                failed(e)
            errs[e].close()
            last = dict(json.loads(text.strip().splitlines()[-1]), **({"ran_precision": ran[e]} if e in ran else {}))
            got[e] = [dict(last, median_s=statistics.median(r), min_s=min(r), passes=r) for r in times[e]]
        return got

    def stepped(keys):
        """{(engine, B, T): [result per round]} for the engines that step, each precision's together (step_group):
        a neighbour's burst of a few seconds then lands on every engine of a comparison alike, where runs of R
        passes back to back, engine after engine, let it land on one engine's run and not the other's."""
        got = {}
        for b, t in keys:
            for precision in dict.fromkeys(p for p, _, _, _ in targets):  # the int8 rows of vit.h in one group
                group = list(dict.fromkeys(e for p, _, mine, theirs in targets if p == precision
                                           for e in (mine,) + theirs if e in steppers))
                if group:
                    got.update({(e, b, t): r for e, r in step_group(group, b, t).items()})
        return got

    peak = fma_peak(quiet)
    quiet_keys = [(b, t) for b in batches for t in (1, 2)]
    got = stepped(quiet_keys)
    got.update(rounds([[k] for k in quiet_keys], args.rounds, "quiet", [e for e in engines if e[0] not in steppers]))
    if peak:  # measured again: a neighbour's burst lowers the peak as it lowers the rows
        peak = max(peak, fma_peak(quiet))
    cols = [f"B={b}, {t} thread{'s' if t > 1 else ''}" for b, t in quiet_keys]
    dtypes = [d for d in args.vit_dtypes.split(",") if d != "F32"]
    print(f"{name} ({size} px, random weights: tools/export.py {PEER_MODELS[name]} --seed 0"
          + (f"; vit.h's {' and '.join(dtypes)} files: tools/export.py --from it --dtype" if dtypes else "")
          + (" (I8A7: --dtype I8 --activation-bits 7)" if "I8A7" in dtypes else "")
          + f"), {cpu_summary()}. vit.h, ONNX Runtime and OpenVINO: each precision's engines loaded side by side, "
          f"their passes alternating one by one, {args.reps} of each a round; the median over {args.rounds} rounds of "
          f"each round's median. PyTorch: the median over {args.rounds} rounds of a run's median of {args.reps} "
          f"passes.\n")
    print("| engine | " + " | ".join(cols) + " | ran | rel. L2 to PyTorch (B=1) | load (s) | peak RSS, B=1 (MB) |")
    print("|---|" + "---|" * (len(cols) + 4))
    for engine, _ in engines:
        first = got[(engine, 1, 1)][0]
        cells = [f"{med(got[(engine, b, t)]):.3f} s{' (busy)' if busy_flag[(engine, b, t)] > quiet.threshold else ''}"
                 for b, t in quiet_keys]
        print(f"| {engine} | " + " | ".join(cells) + f" | {first.get('ran_precision', 'f32')} | "
              f"{rel_l2(engine, 1):.1e} | {first['load_s']:.2f} | {first['peak_rss_mb']:.0f} |")

    # The targets, for the rows present.
    present = [n for n, _ in engines]
    short = {"vit.h f32 (bench_vit)": "vit.h f32", "vit.h bf16 (bench_vit)": "vit.h BF16", "ONNX Runtime f32": "ORT f32",
             "OpenVINO f32": "OV f32", "OpenVINO bf16": "OV bf16",
             "vit.h int8 (bench_vit)": "vit.h I8", "vit.h int8, x on 7 bits, (bench_vit)": "vit.h I8 x7",
             "ONNX Runtime int8 (dynamic quantisation)": "ORT int8",
             "OpenVINO int8 (NNCF post-training quantisation)": "OV int8"}
    flops = model_flops(model)
    print(f"\nTargets, each cell (rel. L2: to PyTorch f32's output at that B); FLOPs {flops / 1e9:.1f} G per image "
          f"(linear layers, attention's q.k and p.v, patch embedding)"
          + (f"; FMA peak {peak:.1f} GFLOP/s per core (build/bench_kernels --peak):\n" if peak else ":\n"))
    missed = []  # (vit.h's engine, B, T) of each cell that misses its target past B = 1 on one thread
    for b, t in quiet_keys:
        cell = f"{name} B={b} T={t}"
        for precision, what, mine, theirs in targets:
            if mine not in present or not all(o in present for o in theirs):
                continue
            peer = min(theirs, key=lambda o: med(got[(o, b, t)]))
            ratio = med(got[(mine, b, t)]) / med(got[(peer, b, t)])
            goal = TARGETS[precision]
            met = ", met" if ratio <= goal else ""
            if not met and (b, t) != (1, 1):
                missed.append((mine, b, t))
            # Two decimals, but a third where two would print the target itself and hide the verdict.
            shown = f"{ratio:.3f}" if f"{ratio:.2f}" == f"{goal:.2f}" else f"{ratio:.2f}"
            line = f"- {cell} {precision}: {what} = {shown} (target <= {goal:.2f}{met})"
            if precision == "int8":
                line += "; rel. L2 " + ", ".join(f"{short[e]} {rel_l2(e, b):.1e}" for e in (mine,) + theirs)
            # The verdict is the medians'; beside it each engine's rounds, and the ratio of their fastest ones.
            (m0, m1), (p0, p1) = spread(got[(mine, b, t)]), spread(got[(peer, b, t)])
            line += (f"; rounds {short.get(mine, mine)} {m0:.3f}-{m1:.3f} s, {short.get(peer, peer)} "
                     f"{p0:.3f}-{p1:.3f} s, fastest over fastest {m0 / p0:.2f}")
            # And the median of the ratios of passes that ran side by side (the same rep of the same round): a
            # pair's two passes ran within a second or so of each other, in the same spell of the machine.
            pairs = [a / p for rm, rp in zip(got[(mine, b, t)], got[(peer, b, t)])
                     for a, p in zip(rm.get("passes", ()), rp.get("passes", ()))]
            if pairs:
                line += (f", pass by pass {statistics.median(pairs):.2f} "
                         f"(faster in {sum(r < 1.0 for r in pairs)} of {len(pairs)})")
            print(line)
        mine = "vit.h f32 (bench_vit)"
        if mine in present:
            rate = flops * b / med(got[(mine, b, t)]) / 1e9
            cores = f"{t} core{'s' if t > 1 else ''}"
            print(f"- {cell} f32: vit.h {rate:.1f} GFLOP/s"
                  + (f", {rate / (peak * t):.1%} of the FMA peak ({peak * t:.1f} GFLOP/s on {cores})" if peak
                     else " (no build/bench_kernels for the FMA peak: make bench builds it)"))
    flagged = sum(1 for v in busy_flag.values() if v > quiet.threshold)
    print(f"{flagged} measurement cell(s) marked (busy): other processes kept the cores busy then "
          f"(waited {quiet.waited:.0f} s so far of a {quiet.budget:.0f} s budget for a quiet machine).")
    if args.profiles:
        profiles(name, args, folder, inputs, quiet, missed)
    if args.no_busy:
        return

    # Busy core: a spinner on one core, each engine's 1 and 2 threads alternating.
    with Spinner():
        busy = rounds([[(b, 1), (b, 2)] for b in batches], max(1, args.rounds - 1), "busy core")
    print(f"\n{name}, another process spinning on one core while 1- and 2-thread runs alternate "
          f"(median over {max(1, args.rounds - 1)} round(s)):\n")
    head = []
    for b in batches:
        head += [f"B={b}, 1 thread", f"B={b}, 2 threads", f"B={b}, 2 threads / 1"]
    print("| engine, one core busy | " + " | ".join(head) + " |")
    print("|---|" + "---|" * len(head))
    for engine, _ in engines:
        cells = []
        for b in batches:
            one, two = med(busy[(engine, b, 1)]), med(busy[(engine, b, 2)])
            ratio = f"**{two / one:.2f}**" if two / one <= 1.1 else f"{two / one:.2f}"
            cells += [f"{one:.3f} s", f"{two:.3f} s", ratio]
        print(f"| {engine} | " + " | ".join(cells) + " |")


def profiles(name, args, folder, inputs, quiet, missed):
    """--profiles: where one pass at B = 1 on one thread goes, for each --vit-dtypes precision, vit.h's pieces
    (build/profile_vit) and then OpenVINO's operations (bench_peers.py --profile) on the same CPU: a cell missed
    in this run's table is explained by the pieces it loses in, each at its rate. Then the same pair at the B
    and threads of each other cell this run missed (missed: (vit.h's engine, B, T)), as the issue asks of a
    missed cell: the profile that says why, from the same run."""
    reps = str(max(3, args.reps))
    dtype_of = {vit_engine(d): d for d in PRECISION}
    print(f"\n{name}, where one pass goes (B=1, one thread, each precision's vit.h pieces and then OpenVINO's "
          f"operations, one after the other; the pieces' rates against one core's F32 FMA peak, so bf16's and "
          f"int8's exceed 100%: their instructions' peaks are 2x and 4x it):")
    cells = [(d, 1, 1) for d in args.vit_dtypes.split(",")]
    extra = [(dtype_of[mine], b, t) for mine, b, t in missed]
    for k, (dtype, b, t) in enumerate(cells + extra):
        if k == len(cells):
            print(f"\n{name}, the cells missed past B=1 on one thread, each at its own B and threads, the same "
                  f"pair of profiles:")
        precision = PRECISION[dtype]
        peer = precision.split(",")[0]  # OpenVINO's setting: int8 for both I8 files
        size = ["--batch", str(b), "--threads", str(t)]
        quiet.wait()
        with cpus_for(t):
            ours = vit_output(["build/profile_vit", vit_file(folder, dtype), "--reps", reps] + size)
            # OpenVINO's int8 is I8's, printed there where I8 is profiled at the same B and threads
            theirs = None if dtype == "I8A7" and ("I8", b, t) in cells + extra else subprocess.run(
                [PEERS_PY, "bench/bench_peers.py", os.path.join(folder, "model.onnx"), "--engine", "ov", "--precision",
                 peer, "--reps", reps, "--input", inputs[b], "--profile"] + size,
                capture_output=True, text=True, cwd=ROOT)
        if theirs is not None and theirs.returncode != 0:
            sys.exit(f"compare.py: bench_peers.py --profile: {theirs.stderr.strip()}")
        head, table = ours.strip().split("\n", 1)
        print(f"\n{precision.rstrip(',')}, vit.h's pieces ({head}):\n\n{table}"
              + ("" if theirs is None else f"\n\n{peer}, " + theirs.stdout.strip().split("\n", 1)[1].strip()))


def stale_builds(names):
    """The programs in build/ older than vit.h or their own source: a run would time the code they were built from."""
    stale = []
    for name in names:
        exe = os.path.join(ROOT, "build", name)
        sources = [os.path.join(ROOT, p) for p in ("vit.h", f"bench/{name}.c", "bench/bench.h")]
        if os.path.exists(exe) and os.path.getmtime(exe) < max(os.path.getmtime(p) for p in sources if os.path.exists(p)):
            stale.append(f"build/{name}")
    return stale


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="B=1 only (and without --peers, ViT-B/16 only)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--modules", action="store_true", help="the seed modules and ViT parts instead of whole ViTs")
    ap.add_argument("--min-time", type=float, default=0.25, help="--modules: seconds per measurement (default 0.25)")
    ap.add_argument("--only", help="--modules: comma-separated name fragments to run (default all)")
    ap.add_argument("--max-wait", type=float, default=300, help="--modules, --peers: seconds to wait in all for a quiet machine (default 300)")
    ap.add_argument("--peers", action="store_true", help="ViTs in vit.h, ONNX Runtime, OpenVINO and PyTorch, and a busy-core table")
    ap.add_argument("--models", default=PEER_DEFAULT, help=f"--peers: comma-separated, of {', '.join(PEER_MODELS)} (default {PEER_DEFAULT})")
    ap.add_argument("--no-busy", action="store_true", help="--peers: leave out the busy-core table")
    ap.add_argument("--profiles", action="store_true", help="--peers: then vit.h's and OpenVINO's profiles of a pass at "
                                                              "B=1 on one thread, each --vit-dtypes precision")
    ap.add_argument("--vit-dtypes", default="F32", help="--peers: vit.h rows, one per stored dtype, F32, BF16, I8 or I8A7 (I8 with "
                                                   "x on 7 bits: tools/export.py --activation-bits 7) (default F32)")
    ap.add_argument("--out", help="the Markdown file whose section of this run's kind gets the tables "
                                  "(default docs/BENCHMARKS.md; '-': print only; --quick and --only print only unless given)")
    args = ap.parse_args()
    stale = stale_builds(["bench_vit"] + (["profile_vit"] if args.profiles else []))
    if stale:
        sys.exit(f"compare.py: {' and '.join(stale)} older than vit.h or its source, so this run would time the code "
                 "it was built from: `make bench` rebuilds them")
    out = args.out if args.out is not None else None if args.quick or args.only else os.path.join(ROOT, "docs", "BENCHMARKS.md")
    if out in (None, "-"):
        return run(args)
    key = "--modules" if args.modules else f"--peers --models {args.models}" if args.peers else "whole ViTs"
    tee = Tee(sys.stdout)
    sys.stdout = tee
    try:
        run(args)
    finally:
        sys.stdout = tee.stream
    write_section(out, key, "".join(tee.text).strip() + "\n")
    print(f"compare.py: wrote the tables into {out} (section '{key}')", file=sys.stderr)


class Tee:
    """stdout, with a copy of everything printed kept in .text."""

    def __init__(self, stream):
        self.stream, self.text = stream, []

    def write(self, s):
        self.text.append(s)
        return self.stream.write(s)

    def flush(self):
        self.stream.flush()


def write_section(path, key, body):
    """body between path's markers for key, replacing what was there; a new section at the end when missing."""
    begin, end = f"<!-- compare.py {key}: begin -->", f"<!-- compare.py {key}: end -->"
    text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
    section = f"{begin}\n\n{body}\n{end}"
    if begin in text and end in text:
        text = text[:text.index(begin)] + section + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + f"\n\n`bench/compare.py` ({key}):\n\n{section}\n"
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def run(args):
    if args.modules:
        return modules(args)
    if args.peers:
        return peers(args)
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
    print("| model | B | threads | vit.h (s) | PyTorch (s) | vit.h / PyTorch | vit.h peak RSS (MB) | weights (MB) | vit.h load (s) | PyTorch load (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, batch, threads, v, t in rows:
        size = os.path.getsize(os.path.join(ROOT, "build", "bench", name.replace("/", "_") + ".safetensors")) / 2**20
        print(f"| {name} | {batch} | {threads} | {v['median_s']:.4f} | {t['median_s']:.4f} | **{v['median_s'] / t['median_s']:.2f}** | "
              f"{v['peak_rss_mb']:.0f} ({v['peak_rss_mb'] / size:.2f}x) | {size:.0f} | {v['load_s']:.3f} | {t['load_s']:.3f} |")
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
