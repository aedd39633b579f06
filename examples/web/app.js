// The page: picks a model and an image, hands them to the worker
// (worker.js, which runs vit.h), and shows the classes and attention maps;
// the map picker swaps the rollout for one class's map by a vit_explain
// method (the class picker: the predicted class unless another is picked).
// Every action is a job on one queue; a failed job leaves a message and the
// last good model in place. The shipped model, once loaded, classifies the
// first sample, so the first screen already shows classes and maps. A file
// that records untrained weights says so, as `vit classify` does. window.vitWeb
// is what tests/test_web.py reads.
'use strict';

const $ = (id) => document.getElementById(id);
const DEFAULT_MODEL = 'fashion_vit.safetensors';
const MB = 1 << 20;
// The map picker: the attention rollout (not class-specific; each layer's
// heads are below it), or a vit_explain method by its vit_method_name.
const METHODS = [
  ['attention', 'attention rollout through all layers'],
  ['grad-rollout', 'gradient rollout'],
  ['chefer', 'Chefer et al. relevance'],
  ['legrad', 'LeGrad'],
  ['gradcam', 'Grad-CAM'],
  ['saliency', 'saliency'],
  ['gxi', 'gradient \u00d7 input'],
  ['ig', 'integrated gradients'],
];
const PIXEL_METHODS = ['saliency', 'gxi', 'ig']; // maps over the crop's pixels; the others over its patches

const vitWeb = window.vitWeb = {
  maxModelBytes: 1024 * MB, // WebAssembly memory is at most 2 GB here: file, converted weights, activations
  maxImageBytes: 256 * MB,
  model: null,              // the loaded model's description (worker.js modelInfo)
  last: null,               // the last classification: {name, probs, input, forwardMs}
  explained: null,          // the class map shown: {method, cls, side, map (side * side raw values)}; null: attention
  jobs: 0,                  // jobs queued so far
  idle,                     // settles when every queued job, and any job they queued, has run
};

// ---- worker ----

let worker = null;
let nextId = 1;
const pending = new Map();
let current = null;         // {name, bytes}: the loaded model's file, to reload a replaced worker

function startWorker() {
  worker = new Worker('worker.js');
  worker.onmessage = (e) => {
    const job = pending.get(e.data.id);
    pending.delete(e.data.id);
    if (e.data.ok) job.resolve(e.data);
    else job.reject(Object.assign(new Error(e.data.error), { fatal: e.data.fatal }));
  };
  worker.onerror = (e) => { // the worker's script itself failed
    e.preventDefault();
    for (const job of pending.values()) job.reject(Object.assign(new Error(e.message || 'the worker failed'), { fatal: true }));
    pending.clear();
  };
}

function call(op, msg = {}, transfer = []) {
  return new Promise((resolve, reject) => {
    const id = nextId++;
    pending.set(id, { resolve, reject });
    worker.postMessage({ id, op, ...msg }, transfer);
  });
}

// A trap or abort leaves the module unusable: a new worker, the model reloaded.
async function replaceWorker() {
  worker.terminate();
  for (const job of pending.values()) job.reject(new Error('the worker was replaced'));
  pending.clear();
  startWorker();
  if (current) {
    try {
      const copy = current.bytes.slice(0);
      await call('load', { name: current.name, bytes: copy }, [copy]);
    } catch (err) {
      current = null;
      vitWeb.model = null;
      throw new Error(`WebAssembly could not restart: ${err.message}`);
    }
  }
}

// ---- jobs ----

let queue = Promise.resolve();

async function idle() {
  let seen;
  do { seen = queue; await seen; } while (seen !== queue);
}

// Runs job() after the others; its error becomes the page's message.
function enqueue(what, job) {
  vitWeb.jobs++;
  queue = queue.then(async () => {
    say('info', `${what}\u2026`);
    try {
      await job();
    } catch (err) {
      let text = err.message;
      if (err.fatal) {
        try { await replaceWorker(); } catch (again) { text += `; ${again.message}`; }
      }
      say('error', text);
    }
  });
  return queue;
}

function say(kind, text) {
  const m = $('message');
  m.className = kind;
  m.dataset.kind = kind;
  m.textContent = text;
}

function megabytes(n) { return n < MB ? `${(n / 1024).toFixed(1)} KB` : `${(n / MB).toFixed(n < 10 * MB ? 1 : 0)} MB`; }

// A file's bytes from read() (File.arrayBuffer or a fetch), refused past
// max bytes: before reading when its size is known, else after.
async function readUpTo(name, size, read, max, what) {
  const refuse = (n) => new Error(`${name} is ${megabytes(n)}, over the ${megabytes(max)} this page takes for ${what}`);
  if (size > max) throw refuse(size);
  const bytes = await read();
  if (bytes.byteLength > max) throw refuse(bytes.byteLength);
  return bytes;
}

// then(): more work in the same job once the model is loaded (a first sample).
function loadModel(name, size, read, then) {
  return enqueue(`loading ${name}`, async () => {
    const bytes = await readUpTo(name, size, read, vitWeb.maxModelBytes,
                                 'a model (its WebAssembly memory, at most 2 GB, holds the file, its weights and the activations)');
    const copy = bytes.slice(0); // the worker's; bytes stay here to reload a replaced worker
    let out;
    try {
      out = await call('load', { name, bytes: copy }, [copy]);
    } catch (err) {
      err.message = `${name}: ${err.message.replace(/^<memory>: /, '')}`;
      throw err;
    }
    current = { name, bytes };
    vitWeb.model = out.info;
    showModel(name, out.info);
    $('result').hidden = true;
    vitWeb.last = null;
    say('ok', `${name} loaded`);
    if (then) await then();
  });
}

function classify(name, size, read) {
  return enqueue(`classifying ${name}`, () => classifyNow(name, size, read));
}

async function classifyNow(name, size, read) {
  if (!current) throw new Error('no model loaded');
  const bytes = await readUpTo(name, size, read, vitWeb.maxImageBytes, 'an image');
  let out;
  try {
    out = await call('classify', { bytes }, [bytes]);
  } catch (err) {
    err.message = `${name}: ${err.message}`;
    throw err;
  }
  vitWeb.last = { name, probs: Array.from(out.probs), input: Array.from(out.input), forwardMs: out.forwardMs };
  await showResult(out);
  await showLayer(vitWeb.model.depth - 1);
  await showMap();
  say('ok', `${name}: ${$('top').firstChild.dataset.label}`);
}

// ---- drawing ----

const urls = new Map(); // img element -> its blob: URL
let rolloutPng = null;  // the last image's rollout (ArrayBuffer)

function setPng(img, buffer) {
  if (urls.has(img)) URL.revokeObjectURL(urls.get(img));
  const url = URL.createObjectURL(new Blob([buffer], { type: 'image/png' }));
  urls.set(img, url);
  img.src = url;
  return img.decode();
}

function showModel(name, m) {
  const norm = (v) => v.slice(0, m.channels).map((x) => +x.toFixed(4)).join(', ');
  $('model-info').textContent =
    `${name}: ViT (${m.naming}), ${m.params.toLocaleString('en')} weights, ${m.depth} layers of ${m.heads} heads, ` +
    `${m.imageSize}\u00d7${m.imageSize} ${m.channels === 1 ? 'grey' : 'RGB'} input in ${m.patch}\u00d7${m.patch} patches, ` +
    `${m.classes} classes${m.dataset ? ` (${m.dataset})` : ''}. Preprocessing, as vit classify does it: ` +
    `resize to ${m.resize}, centre crop ${m.crop}, mean ${norm(m.mean)}, std ${norm(m.std)}.`;
  const warning = $('model-warning');
  warning.hidden = !m.untrained;
  warning.textContent = m.untrained
    ? `WARNING: ${name} holds untrained weights (${m.untrained}): its predictions mean nothing.` : '';
  const layer = $('layer');
  layer.replaceChildren();
  for (let l = 0; l < m.depth; l++) layer.add(new Option(`layer ${l}${l === m.depth - 1 ? ' (last)' : ''}`, l));
}

function showResult(out) {
  const m = vitWeb.model;
  const order = Array.from(out.probs.keys()).sort((a, b) => out.probs[b] - out.probs[a] || a - b);
  const pick = $('class');
  pick.replaceChildren();
  for (const k of order) pick.add(new Option(`${m.labels[k]} (${(100 * out.probs[k]).toFixed(2)}%)`, k));
  pick.value = String(order[0]);
  const top = $('top');
  top.replaceChildren();
  for (const k of order.slice(0, 5)) {
    const li = document.createElement('li');
    const p = out.probs[k];
    li.dataset.label = m.labels[k];
    li.innerHTML = '<span class="label"></span><span class="bar"><span></span></span><span class="prob"></span>';
    li.querySelector('.label').textContent = m.labels[k];
    li.querySelector('.bar span').style.width = `${(100 * p).toFixed(1)}%`;
    li.querySelector('.prob').textContent = `${(100 * p).toFixed(2)}%`;
    top.append(li);
  }
  $('timing').textContent = `forward ${out.forwardMs.toFixed(2)} ms; with decoding and preprocessing ` +
                            `${out.totalMs.toFixed(2)} ms (WebAssembly SIMD128, one thread)`;
  $('result').hidden = false;
  rolloutPng = out.rollout;
  return setPng($('crop'), out.crop);
}

// The big map: the rollout, or the picked method's map for the picked
// class. Returns what it drew, for the page's message.
async function showMap() {
  const method = $('method').value;
  const img = $('map');
  const caption = $('map-caption');
  $('class').disabled = method === 'attention';
  vitWeb.explained = null;
  img.style.visibility = '';
  if (method === 'attention') {
    caption.textContent = img.alt = METHODS[0][1];
    await setPng(img, rolloutPng);
    return '';
  }
  const cls = +$('class').value;
  const what = `${$('method').selectedOptions[0].text} for ${vitWeb.model.labels[cls]}`;
  const t0 = performance.now();
  let out;
  try {
    out = await call('explain', { method, cls });
  } catch (err) {
    img.style.visibility = 'hidden'; // its place kept, empty
    caption.textContent = `${what}: no map`;
    err.message = `${what}: ${err.message}`;
    throw err;
  }
  const ms = performance.now() - t0;
  vitWeb.explained = { method, cls, side: out.side, map: Array.from(out.map) };
  caption.textContent = img.alt = `${what}, over ${PIXEL_METHODS.includes(method) ? 'pixels' : 'patches'}`;
  await setPng(img, out.png);
  return `${what}: ${ms.toFixed(1)} ms`;
}

async function showLayer(layer) {
  const out = await call('maps', { layer });
  const heads = $('heads');
  const figs = [];
  out.pngs.forEach((png, i) => {
    let fig = heads.children[i];
    if (!fig) {
      fig = document.createElement('figure');
      fig.innerHTML = '<img alt=""><figcaption></figcaption>';
      heads.append(fig);
    }
    fig.querySelector('figcaption').textContent = i === 0 ? 'mean of the heads' : `head ${i - 1}`;
    figs.push(setPng(fig.querySelector('img'), png));
  });
  while (heads.children.length > out.pngs.length) heads.lastChild.remove();
  $('layer').value = String(layer);
  await Promise.all(figs);
}

async function drawColorbar() {
  const out = await call('viridis');
  const c = $('colorbar').getContext('2d');
  const img = c.createImageData(256, 1);
  for (let i = 0; i < 256; i++) img.data.set([out.rgb[3 * i], out.rgb[3 * i + 1], out.rgb[3 * i + 2], 255], 4 * i);
  c.putImageData(img, 0, 0);
}

// ---- inputs ----

function fetched(url) {
  return async () => {
    const r = await fetch(url);
    if (!r.ok) throw new Error(`${url}: ${r.status} ${r.statusText}`);
    return r.arrayBuffer();
  };
}

function takeFile(file) {
  if (/\.safetensors$/i.test(file.name)) loadModel(file.name, file.size, () => file.arrayBuffer());
  else classify(file.name, file.size, () => file.arrayBuffer());
}

// The shipped model, then its first sample classified: the first screen shows maps.
function loadDefaultModel() { loadModel(DEFAULT_MODEL, 0, fetched(DEFAULT_MODEL), classifyFirstSample); }

async function classifyFirstSample() {
  const s = (await samples)[0];
  if (s) await classifyNow(s.file, 0, fetched(`samples/${s.file}`));
}

// The sample buttons; the list of samples (empty without samples.json).
async function showSamples() {
  const r = await fetch('samples/samples.json');
  if (!r.ok) return [];
  const list = await r.json();
  for (const s of list) {
    const b = document.createElement('button');
    b.type = 'button';
    b.className = 'sample';
    b.dataset.file = s.file;
    b.title = `Fashion-MNIST test image ${s.index}: ${s.label}`;
    b.innerHTML = '<img alt=""><span></span>';
    b.querySelector('img').src = `samples/${s.file}`;
    b.querySelector('span').textContent = s.label;
    b.onclick = () => classify(s.file, 0, fetched(`samples/${s.file}`));
    $('samples').append(b);
  }
  return list;
}

function wire() {
  $('default-model').onclick = loadDefaultModel;
  for (const id of ['model-file', 'image-file']) {
    $(id).onchange = (e) => {
      const file = e.target.files[0];
      e.target.value = ''; // the same file chosen again is a new change
      if (file && id === 'model-file') loadModel(file.name, file.size, () => file.arrayBuffer());
      else if (file) takeFile(file);
    };
  }
  for (const [value, text] of METHODS) $('method').add(new Option(text, value));
  for (const id of ['method', 'class']) {
    $(id).onchange = () => enqueue(`drawing ${$('method').selectedOptions[0].text}`,
                                   async () => say('ok', await showMap()));
  }
  $('layer').onchange = (e) => enqueue(`drawing layer ${e.target.value}`, async () => { await showLayer(+e.target.value); say('ok', ''); });
  // A file dropped anywhere on the page (not opened by the browser instead).
  const drop = $('drop');
  window.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
  window.addEventListener('dragleave', () => drop.classList.remove('over'));
  window.addEventListener('drop', (e) => {
    e.preventDefault();
    drop.classList.remove('over');
    if (e.dataTransfer.files[0]) takeFile(e.dataTransfer.files[0]);
  });
}

startWorker();
wire();
const samples = showSamples().catch(() => []);
enqueue('starting WebAssembly', drawColorbar);
loadDefaultModel();
