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

--stepped runs one pass for each line read from stdin after the warm-up
(printing "ready" first, then each pass's seconds), until end of input,
then prints as usual over those passes: bench/compare.py alternates the
engines pass by pass, each loaded once (bench_vit --stepped). Stepped,
ONNX Runtime's threads stop spinning at the end of each pass
(session.force_spinning_stop): otherwise they spin on into the next
engine's pass.

--profile (OpenVINO only) compiles with PERF_COUNT and prints where the
fastest pass spent its time, by OpenVINO's own operations (layer type and
the kernel it chose: FullyConnected on brgemm, the attention Subgraph, ...),
with the multiply-adds of the products counted from the compiled model's
shapes: OpenVINO's side of build/profile_vit, to say which pieces a missed
cell loses in. The counters cost a little: its passes are not the timed
ones of a comparison.
"""

import argparse
import json
import os
import re
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
    ap.add_argument("--stepped", action="store_true",
                    help="after the warm-up, one timed pass per line read from stdin (printing its seconds), to EOF")
    ap.add_argument("--profile", action="store_true",
                    help="OpenVINO: the fastest pass's time per operation kind (PERF_COUNT), as a Markdown table")
    ap.add_argument("--prepare", action="store_true",
                    help="make MODEL.int8.onnx and MODEL.ov-int8.xml if they are missing or stale, then exit")
    args = ap.parse_args(argv)
    if args.prepare:
        return args
    if not args.engine:
        ap.error("--engine is required")
    if args.batch < 1 or args.threads < 1 or args.reps < 1 or args.warmup < 0:
        ap.error("--batch, --threads and --reps must be >= 1, --warmup >= 0")
    if args.profile and args.engine != "ov":
        ap.error("--profile reads OpenVINO's performance counters: --engine ov")
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
    if args.stepped:
        # Stepped, its threads stop spinning when a pass ends (they spin within one as ever): left to spin after it,
        # they kept both cores busy into the next engine's pass (vit.h's then ran as if a core were taken, on one
        # thread; OpenVINO's ran 10-15% slower), where a user's one engine has the cores to itself.
        so.add_session_config_entry("session.force_spinning_stop", "1")
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
    if getattr(args, "profile", False):
        config["PERF_COUNT"] = True
    compiled = core.compile_model(model, "CPU", config)
    req = compiled.create_infer_request()
    caps = core.get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    info = dict(version=ov.__version__, ran_precision=ov_ran(compiled, args.precision), cpu_capabilities=list(caps))
    if getattr(args, "profile", False):
        info["flops"] = ov_flops(compiled)
        info["request"] = req
    return (lambda x: req.infer({0: x})[0].copy()), info, list(shape)


def ov_flops(compiled):
    """FLOPs (2 a multiply-add) of each operation of the compiled model that is a product, by its name: a
    FullyConnected (or MatMul) and a Convolution from their output's shape and their weight's reduced size, and
    an attention Subgraph (three inputs, q (.., N, d), k and v (.., N, d), k perhaps transposed; its output q's
    shape) as 4 (..) N N d."""
    flops = {}
    for op in compiled.get_runtime_model().get_ordered_ops():
        kind = op.get_rt_info()["layerType"].astype(str)
        shapes = [op.input(i).get_partial_shape() for i in range(op.get_input_size())]
        if not all(s.is_static for s in shapes) or not op.get_output_partial_shape(0).is_static:
            continue
        shapes = [s.to_shape() for s in shapes]
        out = int(np.prod(list(op.get_output_shape(0))))
        if kind.startswith("FullyConnected") or kind == "MatMul":
            w = list(shapes[1])
            flops[op.get_friendly_name()] = 2.0 * out * (w[-1] if len(w) >= 2 else 1)
        elif kind == "Convolution" and len(shapes[1]) == 4:
            w = list(shapes[1])
            flops[op.get_friendly_name()] = 2.0 * out * w[1] * w[2] * w[3]
        elif kind == "Subgraph" and re.search("attn|attention", op.get_friendly_name(), re.I) and len(shapes) == 3:
            # attention fused from the export's two MatMuls: q (.., Nq, d), k (.., Nk, d) or kᵀ, v (.., Nk, dv); out
            # (.., Nq, dv), or (.., Nq, heads, dv) with the heads' transpose fused in
            q, k, v, o = (list(t) for t in (*shapes, op.get_output_shape(0)))
            if (len(q) >= 3 and q[:-2] == k[:-2] == v[:-2] and k in (q[:-2] + [v[-2], q[-1]], q[:-2] + [q[-1], v[-2]])
                    and o in (q[:-1] + v[-1:], q[:-3] + [q[-2], q[-3], v[-1]])):
                flops[op.get_friendly_name()] = 2.0 * np.prod(q[:-2]) * q[-2] * v[-2] * (q[-1] + v[-1])
    return flops


def ov_profile(counters, flops, wall_s):
    """A Markdown table of a pass's counters (an infer request's get_profiling_info()) summed by (layer type,
    kernel)."""
    rows = {}
    for p in counters:
        key = (p.node_type + (" of attention" if p.node_type == "Subgraph" and p.node_name in flops else ""),
               p.exec_type)
        r = rows.setdefault(key, [0, 0.0, 0.0])
        r[0] += 1
        r[1] += p.real_time.total_seconds()
        r[2] += flops.get(p.node_name, 0.0)
    total = sum(r[1] for r in rows.values())
    lines = [f"OpenVINO's counters, the fastest pass ({wall_s * 1e3:.1f} ms wall, {total * 1e3:.1f} ms counted):",
             "", "| operation (kernel) | count | ms | share | G(FL)OP/s |", "|---|---|---|---|---|"]
    for (kind, kernel), (n, t, f) in sorted(rows.items(), key=lambda kv: -kv[1][1]):
        if t < 5e-3 * total:
            continue
        rate = f"{f / t / 1e9:.0f}" if f and t > 0 else ""
        lines.append(f"| {kind} ({kernel}) | {n} | {t * 1e3:.2f} | {100 * t / total:.1f}% | {rate} |")
    lines.append(f"| (the rest, each under 0.5%) | | {sum(r[1] for r in rows.values() if r[1] < 5e-3 * total) * 1e3:.2f} | | |")
    return "\n".join(lines)


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
    times, counters = [], None
    req, flops = info.pop("request", None), info.pop("flops", None)
    if args.stepped:
        print("ready", flush=True)
    for _ in iter(sys.stdin.readline, "") if args.stepped else range(args.reps):
        t = time.perf_counter()
        y = run(x)
        times.append(time.perf_counter() - t)
        if args.stepped:
            print(f"{times[-1]:.9f}", flush=True)
        if req is not None and times[-1] == min(times):  # the counters of the fastest pass so far
            counters = req.get_profiling_info()
    if not times:
        sys.exit("bench_peers.py: --stepped: no line read, no pass timed")
    if args.output:
        np.save(args.output, y)
    result = dict(impl=f"{args.engine} {args.precision}", model=args.model, input=list(x.shape), batch=int(x.shape[0]),
                  threads=args.threads, load_s=load_s, reps=len(times), warmup=args.warmup,
                  median_s=statistics.median(times), min_s=min(times),
                  peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, **info)
    print(f"{result['impl']} (ran {info['ran_precision']}, {info['version']}): input {result['input']}, "
          f"{args.threads} thread(s), load {load_s:.3f} s, median {result['median_s']:.4f} s, "
          f"min {result['min_s']:.4f} s over {len(times)} reps, peak RSS {result['peak_rss_mb']:.0f} MB")
    if counters is not None:
        print(ov_profile(counters, flops, min(times)))
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
