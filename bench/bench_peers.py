"""Time ONNX Runtime and OpenVINO on the ONNX export of a vit.h weights file.

    build/bench-venv/bin/python bench/bench_peers.py MODEL.onnx --engine ort|ov --precision P
        --batch B --threads T [--reps R] [--warmup W] [--input IN.npy] [--output OUT.npy] [--json]
    build/bench-venv/bin/python bench/bench_peers.py MODEL.onnx --prepare

The peers' half of bench/compare.py --peers, as bench/bench_vit.c is vit.h's
and bench/bench_torch.py PyTorch's. It runs in its own venv
(build/bench-venv, tools/install_deps.sh bench: onnxruntime, openvino and
onnx pinned in bench/requirements.txt, with the numpy they want), never in
the project's torch venv; MODEL.onnx comes from bench_torch.py --onnx.

Engines and precisions:
    ort f32    onnxruntime.InferenceSession on MODEL.onnx
    ort int8   the same on MODEL.int8.onnx: onnxruntime.quantization's dynamic
               quantisation (int8 weights per output channel, activations
               quantised per tensor at run time), made once and kept beside
               MODEL.onnx (--prepare makes it and exits, so that no timed
               run pays for it)
    ov f32     openvino, INFERENCE_PRECISION_HINT f32
    ov bf16    openvino, INFERENCE_PRECISION_HINT bf16; on a CPU without bf16
               support OpenVINO runs f32 instead, and `ran_precision` in the
               result says what the compiled model reports
Threads: ONNX Runtime's intra_op_num_threads = T (inter-op 1, sequential);
OpenVINO's INFERENCE_NUM_THREADS = T with PERFORMANCE_HINT LATENCY and one
stream. Everything else is each engine's default, as a user gets it. The
input has a fixed batch: OpenVINO's model is reshaped to it before
compiling.

Prints load time (session creation or compile), median and min latency over
R reps after W warm-up passes, and peak RSS; --json prints one JSON object
as the last line; --output saves the last pass's output (.npy).
"""

import argparse
import json
import os
import resource
import statistics
import sys
import time

import numpy as np


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="a .onnx file (bench_torch.py --onnx)")
    ap.add_argument("--engine", choices=("ort", "ov"))
    ap.add_argument("--precision", default="f32", choices=("f32", "bf16", "int8"))
    ap.add_argument("--batch", type=int, default=1, help="batch size (default 1)")
    ap.add_argument("--threads", type=int, default=1, help="threads (default 1)")
    ap.add_argument("--reps", type=int, default=5, help="timed passes (default 5)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed passes first (default 1)")
    ap.add_argument("--input", help="run on this .npy instead of a random input (seed 0)")
    ap.add_argument("--output", help="save the output of the last pass here (.npy)")
    ap.add_argument("--json", action="store_true", help="print one JSON object on the last line")
    ap.add_argument("--prepare", action="store_true", help="make MODEL.int8.onnx if it is missing, then exit")
    args = ap.parse_args(argv)
    if args.prepare:
        return args
    if not args.engine:
        ap.error("--engine is required")
    if args.batch < 1 or args.threads < 1 or args.reps < 1 or args.warmup < 0:
        ap.error("--batch, --threads and --reps must be >= 1, --warmup >= 0")
    if (args.engine, args.precision) not in (("ort", "f32"), ("ort", "int8"), ("ov", "f32"), ("ov", "bf16")):
        ap.error(f"--engine {args.engine} has no precision {args.precision} here (ort: f32, int8; ov: f32, bf16)")
    return args


def int8_model(path):
    """MODEL.int8.onnx, ONNX Runtime's dynamic quantisation of MODEL.onnx, made when missing or older."""
    out = path[:-len(".onnx")] + ".int8.onnx" if path.endswith(".onnx") else path + ".int8.onnx"
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(path):
        from onnxruntime.quantization import QuantType, quantize_dynamic
        tmp = out + ".tmp"
        quantize_dynamic(path, tmp, weight_type=QuantType.QInt8, per_channel=True)
        os.replace(tmp, out)
    return out


def ort_runner(args):
    """(run(x) -> output, what ran) for ONNX Runtime."""
    import onnxruntime as ort
    path = int8_model(args.model) if args.precision == "int8" else args.model
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    return (lambda x: sess.run(None, {name: x})[0]), dict(version=ort.__version__, ran_precision=args.precision)


def ov_runner(args, shape):
    """(run(x) -> output, what ran) for OpenVINO."""
    import openvino as ov
    core = ov.Core()
    model = core.read_model(args.model)
    model.reshape(list(shape))
    compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": args.precision, "INFERENCE_NUM_THREADS": args.threads,
                                                 "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1})
    req = compiled.create_infer_request()
    ran = str(compiled.get_property("INFERENCE_PRECISION_HINT"))
    ran = {"float32": "f32", "f32": "f32", "bfloat16": "bf16", "bf16": "bf16"}.get(ran.split("'")[1] if "'" in ran else ran, ran)
    caps = core.get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    return (lambda x: req.infer({0: x})[0].copy()), dict(version=ov.__version__, ran_precision=ran, cpu_capabilities=list(caps))


def main(argv=None):
    args = parse(sys.argv[1:] if argv is None else argv)
    if args.prepare:
        print(f"int8 model: {int8_model(args.model)}")
        return 0
    x = np.load(args.input).astype(np.float32) if args.input else \
        np.random.default_rng(0).standard_normal((args.batch, 3, 224, 224), dtype=np.float32)
    t = time.perf_counter()
    run, info = ort_runner(args) if args.engine == "ort" else ov_runner(args, x.shape)
    load_s = time.perf_counter() - t
    for _ in range(args.warmup):
        run(x)
    times = []
    for _ in range(args.reps):
        t = time.perf_counter()
        y = run(x)
        times.append(time.perf_counter() - t)
    if args.output:
        np.save(args.output, y)
    result = dict(impl=f"{args.engine} {args.precision}", model=args.model, input=list(x.shape), batch=int(x.shape[0]),
                  threads=args.threads, load_s=load_s, reps=len(times), warmup=args.warmup,
                  median_s=statistics.median(times), min_s=min(times),
                  peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, **info)
    print(f"{result['impl']} (ran {info['ran_precision']}, {info['version']}): input {result['input']}, {args.threads} thread(s), "
          f"load {load_s:.3f} s, median {result['median_s']:.4f} s, min {result['min_s']:.4f} s over {len(times)} reps, "
          f"peak RSS {result['peak_rss_mb']:.0f} MB")
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
