"""Time PyTorch on a vit.h weights file: the PyTorch half of bench/bench_vit.c.

    build/venv/bin/python bench/bench_torch.py MODEL.safetensors --batch B --threads T --reps R
        [--warmup W] [--min-time S] [--tokens N] [--input IN.npy] [--setting auto|openblas|omp]
        [--forward-only-once] [--output OUT.npy] [--spec SPEC] [--json]
    build/venv/bin/python bench/bench_torch.py --serve --threads T --setting openblas|omp
    build/venv/bin/python bench/bench_torch.py MODEL.safetensors [--spec SPEC] --onnx OUT.onnx

Rebuilds the module the file describes (tools/export.py load_module: the
metadata's class and hyperparameters, then the file's weights), runs it in
eval mode under torch.no_grad() on a random input (seed 0; shape as
tools/roundtrip.py gives it for the kind) or on IN.npy, and prints load time,
median and min forward latency over R reps after W warm-up passes, and peak
RSS (ru_maxrss, which includes the ~0.3 GB of `import torch`).

--spec SPEC builds the module from a tools/export.py spec instead
(export.build, e.g. timm:vit_small_patch14_dinov2:img_size=224) and loads
MODEL's tensors into it by name, all of them and no others: for files in
another library's names (timm's), which hold no vit.h metadata. The weights
are used as stored, widened to float32 (a BF16 or I8 file's products are
not rounded as load_module rounds them: give the F32 file).

Threads, with T = --threads. Debian's torch runs matmuls in OpenBLAS, which
has its own thread pool beside PyTorch's intra-op OpenMP pool; both at T
oversubscribe the cores and run ~3x slower. So there are two settings:
    openblas   OPENBLAS_NUM_THREADS=T, OMP_NUM_THREADS=1, torch.set_num_threads(1)
    omp        OPENBLAS_NUM_THREADS=1, OMP_NUM_THREADS=T, torch.set_num_threads(T)
Both must be fixed before torch is imported, so each runs in its own process
(the script re-executes itself with that environment). `auto` (the default)
runs both, openblas first, and reports the faster by median; with T = 1 they
are the same and only openblas runs. OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE,
when set, are passed through unchanged.

--min-time S keeps timing past R reps until S seconds of forward passes
have run (at most 100000 reps), for modules that take microseconds.
--forward-only-once times one cold forward pass (no warm-up, one rep).
--json prints one JSON object as the last line: the winning run, plus
`runs` (every setting's result). --output saves the last pass's output
(.npy).

--onnx writes the module as ONNX (opset 17, batch size free) instead, for
bench/bench_peers.py: the very same weights for ONNX Runtime and OpenVINO.
torch 1.13's exporter runs with grad enabled: under no_grad torchvision's
ViT takes nn.MultiheadAttention's fused path, an operator
(aten::_native_multi_head_attention) it cannot export.

--serve keeps one process (one thread setting, torch imported once) for
many measurements, as bench/compare.py --modules uses it: each line read
from stdin is a JSON object {"model": PATH, "input": NPY, "reps": R,
"warmup": W, "min_time": S}; each answer is one JSON line (the same
fields as --json, or {"error": MESSAGE}). Modules stay loaded by path.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SETTINGS = ("openblas", "omp")


def thread_env(setting, threads):
    """(OPENBLAS_NUM_THREADS, OMP_NUM_THREADS) of a setting; torch.set_num_threads gets the second."""
    return (threads, 1) if setting == "openblas" else (1, threads)


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", nargs="?", help="a .safetensors file written by tools/export.py")
    parser.add_argument("--batch", type=int, default=1, help="batch size (default 1)")
    parser.add_argument("--threads", type=int, default=1, help="cores to use (default 1)")
    parser.add_argument("--reps", type=int, default=5, help="timed forward passes (default 5)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed passes first (default 1)")
    parser.add_argument("--min-time", type=float, default=0.0, help="time at least this many seconds (default 0)")
    parser.add_argument("--tokens", type=int, default=197, help="N where the kind leaves it free (default 197)")
    parser.add_argument("--input", help="run on this .npy instead of a random input")
    parser.add_argument("--setting", default="auto", choices=("auto",) + SETTINGS, help="thread setting (see above)")
    parser.add_argument("--forward-only-once", action="store_true", help="time one cold forward pass only")
    parser.add_argument("--output", help="save the output of the last pass here (.npy)")
    parser.add_argument("--spec", help="build this tools/export.py spec and load MODEL's tensors into it (see above)")
    parser.add_argument("--onnx", metavar="OUT", help="write the module as ONNX to OUT instead of timing it")
    parser.add_argument("--json", action="store_true", help="print one JSON object on the last line")
    parser.add_argument("--serve", action="store_true", help="answer JSON requests on stdin (see above)")
    return parser, parser.parse_args(argv)


def forward_times(module, x, warmup, reps, min_time):
    """(seconds per forward pass, the last output): `reps` passes after `warmup`, more until min_time seconds have run."""
    import torch

    from export import reference_forward
    times, spent = [], 0.0
    with torch.no_grad():
        for _ in range(warmup):
            reference_forward(module, x)
        while len(times) < 100000 and (len(times) < reps or spent < min_time):
            t = time.perf_counter()
            y = reference_forward(module, x)
            times.append(time.perf_counter() - t)
            spent += times[-1]
    return times, y


def measure(args, module, meta, x, load_s, base_rss):
    """The result dict of timing module on x in this process."""
    import torch

    warmup, reps = (0, 1) if args.forward_only_once else (args.warmup, args.reps)
    times, y = forward_times(module, x, warmup, reps, 0.0 if args.forward_only_once else args.min_time)
    if getattr(args, "output", None):
        import numpy as np
        np.save(args.output, y.numpy())
    openblas, omp = thread_env(args.setting, args.threads)
    return dict(model=args.model, kind=meta["kind"], naming=meta["naming"], input=list(x.shape),
                threads=args.threads, setting=args.setting, openblas_threads=openblas, omp_threads=omp,
                load_s=load_s, reps=len(times), warmup=warmup, cold=args.forward_only_once,
                median_s=statistics.median(times), min_s=min(times),
                peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                import_rss_mb=base_rss / 1024, torch=torch.__version__)


def setup(args):
    """Import torch and the tools in a process whose thread environment is already args.setting's."""
    import torch

    torch.set_num_threads(thread_env(args.setting, args.threads)[1])
    sys.path.insert(0, os.path.join(ROOT, "tools"))


def load_input(args, meta):
    import numpy as np
    import torch

    from roundtrip import input_shape
    if args.input:
        return torch.from_numpy(np.load(args.input).astype(np.float32))
    shape = input_shape(os.path.join(ROOT, "build", "vit"), args.model, args.batch, args.tokens)
    return torch.randn(shape, generator=torch.Generator().manual_seed(0))


def load(args):
    """(module, metadata) of args.model: load_module, or with --spec the spec's module holding the file's tensors."""
    import torch

    from export import ExportError, build, load_module, load_safetensors
    if not args.spec:
        return load_module(args.model)
    module = build(args.spec)
    tensors, meta = load_safetensors(args.model)
    state = {k: v for k, v in module.state_dict().items() if v.is_floating_point()}
    if set(state) != set(tensors):
        raise ExportError(f"{args.model} does not hold {args.spec}'s tensors: missing {sorted(set(state) - set(tensors))}, "
                          f"unexpected {sorted(set(tensors) - set(state))}")
    with torch.no_grad():
        for name, t in tensors.items():
            if list(t.shape) != list(state[name].shape):
                raise ExportError(f"{args.model}: tensor {name!r} has shape {list(t.shape)}, "
                                  f"{args.spec}'s is {list(state[name].shape)}")
            state[name].copy_(torch.from_numpy(t))
    return module, dict(meta, kind="vit", naming=args.spec.partition(":")[0])


def onnx_export(args):
    """Write args.model's module as ONNX to args.onnx (batch size free)."""
    import torch

    sys.path.insert(0, os.path.join(ROOT, "tools"))
    module, meta = load(args)
    x = load_input(args, meta)
    tmp = args.onnx + ".tmp"
    with torch.enable_grad():  # see the module docstring
        torch.onnx.export(module, x, tmp, input_names=["x"], output_names=["y"], opset_version=17, do_constant_folding=True,
                          dynamic_axes={"x": {0: "B"}, "y": {0: "B"}})
    os.replace(tmp, args.onnx)
    print(f"wrote {args.onnx}: {meta['kind']}, input {list(x.shape)} (batch size free)")
    return 0


def run(args):
    """Time the model in this process, whose thread environment is already args.setting's."""
    setup(args)
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    module, meta = load(args)
    load_s = time.perf_counter() - t
    return measure(args, module, meta, load_input(args, meta), load_s, base_rss)


def serve(args):
    """Answer one JSON request per stdin line (see the module docstring) until EOF."""
    setup(args)
    from export import load_module

    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    modules = {}
    for line in sys.stdin:
        try:
            req = json.loads(line)
            if req["model"] not in modules:
                t = time.perf_counter()
                module, meta = load_module(req["model"])
                modules[req["model"]] = module, meta, time.perf_counter() - t
            module, meta, load_s = modules[req["model"]]
            a = argparse.Namespace(**vars(args))
            a.model, a.input = req["model"], req.get("input")
            a.reps, a.warmup, a.min_time = int(req.get("reps", 5)), int(req.get("warmup", 1)), float(req.get("min_time", 0.0))
            a.batch, a.forward_only_once = int(req.get("batch", 1)), False
            result = measure(a, module, meta, load_input(a, meta), load_s, base_rss)
        except (ValueError, OSError, KeyError) as e:  # ExportError is a ValueError
            result = dict(error=str(e))
        print(json.dumps(result), flush=True)
    return 0


def describe(r):
    return (f"{r['setting']:8s} (OpenBLAS {r['openblas_threads']}, OpenMP {r['omp_threads']}): "
            f"input {r['input']}, load {r['load_s']:.3f} s, forward median {r['median_s']:.4f} s, "
            f"min {r['min_s']:.4f} s over {r['reps']} rep(s){' (cold)' if r['cold'] else ''}, "
            f"peak RSS {r['peak_rss_mb']:.0f} MB (torch alone {r['import_rss_mb']:.0f} MB)")


def child(args, argv, setting):
    """Run one setting in a fresh process with its thread environment; its result dict."""
    openblas, omp = thread_env(setting, args.threads)
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(openblas), OMP_NUM_THREADS=str(omp))
    cmd = [sys.executable, os.path.abspath(__file__)] + argv + ["--setting", setting, "--json"]
    out = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True)
    if out.returncode != 0:
        sys.exit(f"bench_torch.py: setting {setting} failed (exit code {out.returncode})")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    parser, args = parse(argv)
    if args.threads < 1 or args.reps < 1 or args.warmup < 0 or args.batch < 1 or args.min_time < 0:
        parser.error("--threads, --reps and --batch must be >= 1, --warmup and --min-time >= 0")
    if args.serve and args.setting == "auto":
        parser.error("--serve needs --setting openblas or omp")
    if not args.serve and not args.model:
        parser.error("MODEL is required")
    if args.serve and args.spec:
        parser.error("--spec is for one MODEL, not --serve")
    if args.onnx:
        try:
            return onnx_export(args)
        except (ValueError, OSError) as e:  # ExportError is a ValueError
            parser.exit(2, f"bench_torch.py: error: {e}\n")
    if args.setting != "auto":
        openblas, omp = thread_env(args.setting, args.threads)
        if os.environ.get("OPENBLAS_NUM_THREADS") != str(openblas) or os.environ.get("OMP_NUM_THREADS") != str(omp):
            # Thread pools size themselves at import: start again with the right environment.
            env = dict(os.environ, OPENBLAS_NUM_THREADS=str(openblas), OMP_NUM_THREADS=str(omp))
            os.execve(sys.executable, [sys.executable, os.path.abspath(__file__)] + argv, env)
        if args.serve:
            return serve(args)
        try:
            result = run(args)
        except (ValueError, OSError) as e:  # ExportError is a ValueError
            parser.exit(2, f"bench_torch.py: error: {e}\n")
        print(describe(result))
        if args.json:
            print(json.dumps(result))
        return 0

    settings = SETTINGS if args.threads > 1 else SETTINGS[:1]
    runs = [child(args, [a for a in argv if a != "--json"], s) for s in settings]
    best = min(runs, key=lambda r: r["median_s"])
    for r in runs:
        print(describe(r))
    print(f"best: {best['setting']} (median {best['median_s']:.4f} s)")
    if args.json:
        print(json.dumps(dict(best, runs=runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
