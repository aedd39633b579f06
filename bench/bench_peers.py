"""Time ONNX Runtime and OpenVINO on the ONNX export of a vit.h weights file.

    build/bench-venv/bin/python bench/bench_peers.py MODEL.onnx --engine ort|ov --precision P
        --batch B --threads T [--reps R] [--warmup W] [--input IN.npy] [--output OUT.npy] [--json]
    build/bench-venv/bin/python bench/bench_peers.py MODEL.onnx --prepare

The peers' half of bench/compare.py --peers, as bench/bench_vit.c is vit.h's
and bench/bench_torch.py PyTorch's. It runs in its own venv
(build/bench-venv, tools/install_deps.sh bench: onnxruntime, openvino, onnx
and nncf pinned in bench/requirements.txt, with the numpy they want), never
in the project's torch venv; MODEL.onnx comes from bench_torch.py --onnx.

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
    ov int8    openvino on MODEL.ov-int8.xml (and .bin): NNCF's post-training
               quantisation, nncf.quantize(model, dataset,
               model_type=nncf.ModelType.TRANSFORMER) with its default preset
               (MIXED for transformers: symmetric int8 weights per output
               channel, asymmetric int8 activations whose scales are fixed
               at calibration; SmoothQuant and bias correction as NNCF's
               pipeline runs them), of the OpenVINO model read from
               MODEL.onnx. Calibrated on 32 random-normal images of seed 1
               (CALIBRATION_IMAGES, CALIBRATION_SEED) at the model's input
               size: the random weights have nothing a real image would tell
               them, and the timed inputs are random-normal too (seed 0, so
               not among them). Made by --prepare, as MODEL.int8.onnx is. Everything
               outside the quantised layers runs at OpenVINO's default
               precision (bf16 where the CPU has it); `ran_precision` says
               how many of the linear layers run in int8 and what the rest
               ran in
Threads: ONNX Runtime's intra_op_num_threads = T (inter-op 1, sequential);
OpenVINO's INFERENCE_NUM_THREADS = T with PERFORMANCE_HINT LATENCY and one
stream. Everything else is each engine's default, as a user gets it. The
input has a fixed batch: OpenVINO's model is reshaped to it before
compiling.

Prints load time (session creation or compile), median and min latency over
R reps after W warm-up passes, and peak RSS; --json prints one JSON object
as the last line; --output saves the last pass's output (.npy). Without
--input the input is random-normal (seed 0) of the model's own image size.
"""

import argparse
import json
import os
import resource
import statistics
import sys
import time

import numpy as np

ENGINES = {"ort": ("f32", "int8"), "ov": ("f32", "bf16", "int8")}
CALIBRATION_IMAGES = 32  # NNCF's own default subset is 300: 32 keep --prepare at 518 px under a minute or so
CALIBRATION_SEED = 1


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="a .onnx file (bench_torch.py --onnx)")
    ap.add_argument("--engine", choices=tuple(ENGINES))
    ap.add_argument("--precision", default="f32", choices=("f32", "bf16", "int8"))
    ap.add_argument("--batch", type=int, default=1, help="batch size (default 1)")
    ap.add_argument("--threads", type=int, default=1, help="threads (default 1)")
    ap.add_argument("--reps", type=int, default=5, help="timed passes (default 5)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed passes first (default 1)")
    ap.add_argument("--input", help="run on this .npy instead of a random input (seed 0)")
    ap.add_argument("--output", help="save the output of the last pass here (.npy)")
    ap.add_argument("--json", action="store_true", help="print one JSON object on the last line")
    ap.add_argument("--prepare", action="store_true",
                    help="make MODEL.int8.onnx and MODEL.ov-int8.xml if they are missing or stale, then exit")
    args = ap.parse_args(argv)
    if args.prepare:
        return args
    if not args.engine:
        ap.error("--engine is required")
    if args.batch < 1 or args.threads < 1 or args.reps < 1 or args.warmup < 0:
        ap.error("--batch, --threads and --reps must be >= 1, --warmup >= 0")
    if args.precision not in ENGINES[args.engine]:
        ap.error(f"--engine {args.engine} has no precision {args.precision} here ("
                 + "; ".join(f"{e}: {', '.join(p)}" for e, p in ENGINES.items()) + ")")
    return args


def beside(path, suffix):
    """MODEL.onnx's sibling MODEL<suffix>."""
    return (path[:-len(".onnx")] if path.endswith(".onnx") else path) + suffix


def older(out, source):
    return not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(source)


def int8_model(path):
    """MODEL.int8.onnx, ONNX Runtime's dynamic quantisation of MODEL.onnx, made when missing or older."""
    out = beside(path, ".int8.onnx")
    if older(out, path):
        from onnxruntime.quantization import QuantType, quantize_dynamic
        tmp = out + ".tmp"
        quantize_dynamic(path, tmp, weight_type=QuantType.QInt8, per_channel=True)
        os.replace(tmp, out)
    return out


def recipe():
    """How MODEL.ov-int8.xml is made, kept in its rt_info: a cached model made another way is made again."""
    import nncf
    return (f"nncf {nncf.__version__} quantize, ModelType.TRANSFORMER, default preset, {CALIBRATION_IMAGES} "
            f"random-normal images of seed {CALIBRATION_SEED}")


def ov_int8_model(path):
    """MODEL.ov-int8.xml (with its .bin), NNCF's quantisation of MODEL.onnx for OpenVINO, made when missing, older
    than MODEL.onnx or made by another recipe()."""
    import openvino as ov
    out = beside(path, ".ov-int8.xml")
    core = ov.Core()
    if not older(out, path):
        made, key = core.read_model(out), ["vit_bench", "recipe"]
        if made.has_rt_info(key) and made.get_rt_info(key).astype(str) == recipe():
            return out
    import nncf
    model = core.read_model(path)
    shape = model.input(0).get_partial_shape()  # (B, C, H, W), B free
    c, h, w = (shape[i].get_length() for i in (1, 2, 3))
    rng = np.random.default_rng(CALIBRATION_SEED)
    images = [rng.standard_normal((1, c, h, w), dtype=np.float32) for _ in range(CALIBRATION_IMAGES)]
    quantised = nncf.quantize(model, nncf.Dataset(images), model_type=nncf.ModelType.TRANSFORMER,
                              subset_size=len(images))
    quantised.set_rt_info(recipe(), ["vit_bench", "recipe"])
    # OpenVINO reads X.bin beside X.xml: both get their final names, the .xml last, so a half-written pair is never
    # taken for a made one. save_model's default would store the f32 constants left (norms, biases) as f16.
    tmp = beside(path, ".ov-int8.tmp.xml")
    ov.save_model(quantised, tmp, compress_to_fp16=False)
    os.replace(tmp[:-len(".xml")] + ".bin", out[:-len(".xml")] + ".bin")
    os.replace(tmp, out)
    return out


def ort_runner(args, batch):
    """(run(x) -> output, what ran, input shape at `batch`) for ONNX Runtime."""
    import onnxruntime as ort
    path = int8_model(args.model) if args.precision == "int8" else args.model
    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    shape = [batch] + list(sess.get_inputs()[0].shape[1:])
    return (lambda x: sess.run(None, {name: x})[0]), dict(version=ort.__version__, ran_precision=args.precision), shape


def ov_ran(compiled, precision):
    """What a compiled model runs in: its precision hint, and for int8 how many of its linear layers and
    convolutions (the layers NNCF quantises) run in int8."""
    ran = str(compiled.get_property("INFERENCE_PRECISION_HINT"))
    ran = ran.split("'")[1] if "'" in ran else ran
    ran = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}.get(ran, ran)
    if precision != "int8":
        return ran
    ops = [op.get_rt_info() for op in compiled.get_runtime_model().get_ordered_ops()]
    products = [op["runtimePrecision"].astype(str) for op in ops
                if op["layerType"].astype(str) in ("FullyConnected", "MatMul", "Convolution")]
    return f"int8 in {sum(p in ('i8', 'u8') for p in products)} of {len(products)} layers, {ran} elsewhere"


def ov_runner(args, batch, shape=None):
    """(run(x) -> output, what ran, input shape) for OpenVINO: `shape` when given, else the model's at `batch`."""
    import openvino as ov
    core = ov.Core()
    model = core.read_model(ov_int8_model(args.model) if args.precision == "int8" else args.model)
    if shape is None:
        shape = [batch] + [d.get_length() for d in list(model.input(0).get_partial_shape())[1:]]
    model.reshape(list(shape))
    config = {"INFERENCE_NUM_THREADS": args.threads, "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1}
    if args.precision != "int8":  # int8: the rest of the model at OpenVINO's default precision, as a user gets it
        config["INFERENCE_PRECISION_HINT"] = args.precision
    compiled = core.compile_model(model, "CPU", config)
    req = compiled.create_infer_request()
    caps = core.get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    return ((lambda x: req.infer({0: x})[0].copy()),
            dict(version=ov.__version__, ran_precision=ov_ran(compiled, args.precision), cpu_capabilities=list(caps)),
            list(shape))


def main(argv=None):
    args = parse(sys.argv[1:] if argv is None else argv)
    if args.prepare:
        t = time.perf_counter()
        print(f"ONNX Runtime int8 model: {int8_model(args.model)}")
        print(f"OpenVINO int8 model: {ov_int8_model(args.model)} ({recipe()})")
        print(f"prepared in {time.perf_counter() - t:.1f} s")
        return 0
    x = np.load(args.input).astype(np.float32) if args.input else None
    t = time.perf_counter()
    if args.engine == "ort":
        run, info, shape = ort_runner(args, args.batch)
    else:
        run, info, shape = ov_runner(args, args.batch, None if x is None else x.shape)
    load_s = time.perf_counter() - t
    if x is None:
        x = np.random.default_rng(0).standard_normal(shape, dtype=np.float32)
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
    print(f"{result['impl']} (ran {info['ran_precision']}, {info['version']}): input {result['input']}, "
          f"{args.threads} thread(s), load {load_s:.3f} s, median {result['median_s']:.4f} s, "
          f"min {result['min_s']:.4f} s over {len(times)} reps, peak RSS {result['peak_rss_mb']:.0f} MB")
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
