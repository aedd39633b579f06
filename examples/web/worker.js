// The page's worker: runs vit_web.c (compiled to WebAssembly by `make web`)
// off the main thread, so the page never freezes. Messages in:
//   {id, op: 'load', name, bytes}    a .safetensors file (ArrayBuffer)
//   {id, op: 'classify', bytes}      an image file (ArrayBuffer)
//   {id, op: 'maps', layer}          the PNGs of one layer (layer < 0: rollout and crop)
//   {id, op: 'explain', method, cls} one class's map by a vit_explain method ('chefer'):
//                                    its PNG and raw values (side x side)
// Out: {id, ok: true, ...} or {id, ok: false, error, fatal}; fatal means the
// module aborted and this worker must be replaced.
'use strict';
importScripts('vit_web.js');

let M = null;
const ready = createVitWeb().then((m) => { M = m; });

// bytes (ArrayBuffer) into a fresh malloc'd block of the module's heap.
function toHeap(bytes) {
  const p = M._malloc(Math.max(bytes.byteLength, 1));
  if (!p) throw new Error(`no memory for ${bytes.byteLength} bytes (the page's WebAssembly memory is at most 2 GB)`);
  M.HEAPU8.set(new Uint8Array(bytes), p);
  return p;
}

function check(rc) {
  if (rc !== 0) throw new Error(M.UTF8ToString(M._web_error()));
}

function str(p) { return p ? M.UTF8ToString(p) : null; }

// n values of a heap array from a byte address, copied out.
function copy(heap, addr, n) { return heap.slice(addr / heap.BYTES_PER_ELEMENT, addr / heap.BYTES_PER_ELEMENT + n); }

// web_model_shape(): image_size, in_channels, patch, depth, heads, classes, grid, resize, crop.
function shape() { return copy(M.HEAP32, M._web_model_shape(), 9); }

// The value of an (ASCII) metadata key, or null.
function meta(key) {
  const p = M._malloc(key.length + 1);
  M.stringToUTF8(key, p, key.length + 1);
  const v = str(M._web_model_meta(p));
  M._free(p);
  return v;
}

function modelInfo() {
  const s = shape();
  const norm = Array.from(copy(M.HEAPF32, M._web_model_norm(), 6));
  const labels = [];
  for (let k = 0; k < s[5]; k++) labels.push(str(M._web_label(k)) || `class ${k}`);
  return {
    imageSize: s[0], channels: s[1], patch: s[2], depth: s[3], heads: s[4], classes: s[5], grid: s[6],
    resize: s[7], crop: s[8], mean: norm.slice(0, 3), std: norm.slice(3, 6),
    params: M._web_model_params(), naming: str(M._web_model_naming()), labels,
    dataset: meta('dataset'), accuracy: meta('test_accuracy'), untrained: meta('untrained'),
  };
}

// vit_explain's methods by name (vit_method_name), from the C side.
let methods = null;
function methodId(name) {
  if (!methods) {
    methods = new Map();
    for (let i = 0, p; (p = M._web_method_name(i)); i++) methods.set(M.UTF8ToString(p), i);
  }
  if (!methods.has(name)) throw new Error(`no method '${name}' (vit.h has ${[...methods.keys()].join(', ')})`);
  return methods.get(name);
}

function png(layer, head, px) {
  check(M._web_map_png(layer, head, px));
  return takePng();
}

function takePng() {
  const bytes = M.FS.readFile('/map.png');
  M.FS.unlink('/map.png');
  return bytes.buffer;
}

const ops = {
  load(msg) {
    check(M._web_model_load(toHeap(msg.bytes), msg.bytes.byteLength)); // the C side owns the block now
    return { info: modelInfo() };
  },
  classify(msg) {
    const p = toHeap(msg.bytes);
    const t0 = performance.now();
    let rc;
    try { rc = M._web_classify(p, msg.bytes.byteLength); } finally { M._free(p); }
    const totalMs = performance.now() - t0;
    check(rc);
    const s = shape();
    const [size, channels, classes] = [s[8], s[1], s[5]];
    const probs = copy(M.HEAPF32, M._web_probs(), classes);
    const input = copy(M.HEAPF32, M._web_input(), channels * size * size);
    return { probs, input, forwardMs: M._web_forward_ms(), totalMs, crop: png(0, 0, 0), rollout: png(-1, -1, 224) };
  },
  maps(msg) {
    const heads = [png(msg.layer, -1, 112)];
    for (let h = 0; h < shape()[4]; h++) heads.push(png(msg.layer, h, 112));
    return { layer: msg.layer, pngs: heads };
  },
  explain(msg) {
    check(M._web_explain_png(methodId(msg.method), msg.cls, 224));
    const side = M._web_explain_side();
    return { png: takePng(), side, map: copy(M.HEAPF32, M._web_explain_map(), side * side) };
  },
  viridis() {
    return { rgb: copy(M.HEAPU8, M._web_viridis(), 768) };
  },
};

onmessage = async (e) => {
  const msg = e.data;
  try {
    await ready;
    const out = ops[msg.op](msg);
    const transfer = [];
    for (const v of Object.values(out)) {
      if (v instanceof ArrayBuffer) transfer.push(v);
      else if (ArrayBuffer.isView(v)) transfer.push(v.buffer);
      else if (Array.isArray(v)) for (const b of v) if (b instanceof ArrayBuffer) transfer.push(b);
    }
    postMessage({ id: msg.id, ok: true, ...out }, transfer);
  } catch (err) {
    // A trap or an abort (a WebAssembly.RuntimeError) leaves the module unusable;
    // so does a module that never started.
    const fatal = err instanceof WebAssembly.RuntimeError || M === null;
    postMessage({ id: msg.id, ok: false, error: err && err.message ? err.message : String(err), fatal });
  }
};
