#!/usr/bin/env python3
"""The attention-map page (examples/web, built by `make web`) in Debian's
headless Chromium, driven through the DevTools protocol over a pipe
(--remote-debugging-pipe: no port; the driver is standard library, the
checks use Debian's numpy and PIL), served on 127.0.0.1 by
examples/web/serve.py.

    test_web.py WEB_DIR VIT LOG_DIR      (tests/run.sh: build/web build/native/vit build/log)

Checks, against VIT (the native CLI) for every image the page classifies:
`vit classify` gives the same class, labels and rounded percentages, and
`vit run` on the page's own model input gives its probabilities within
1e-5; for the bundled Fashion-MNIST images that input is (pixel / 255 -
mean) / std of the idx file's pixels, as examples/04_fashion.c makes it.
Screenshots go to LOG_DIR/web_*.png, and the rollout and every head's map
must be in them, in colour. The map picker's methods draw the predicted
class's map (the class picker's default), and another class's on picking
it: each map's raw values are `vit maps --method M --class K --npy`'s (two
methods again on an RGB model), and two classes' pictures differ; a BF16 model's explanation is refused with
vit.h's reason, and the page goes on. The first screen, before any click, already
shows the first sample classified and its maps. A model whose file records
untrained weights (an untrained export.py export) gets a warning, as `vit
classify` gives one; a trained one none. A corrupt model, a model over the size limit,
a model that is not a ViT classifier and a file that is not an image each
give a message (vit.h's own for a truncated or garbage file; the page's
for a mean without its std in the metadata), and the page classifies as
before. Every request the page makes stays on the loopback server. Waits
are for the page's own job queue (no sleeps); a generous deadline only
turns a hang into a failure.
"""
import base64
import fcntl
import gzip
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import queue

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "web"))
from serve import Server  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
FASHION = "/usr/share/datasets/fashion-mnist"
DEADLINE = 120.0  # seconds for any one browser command: a hang fails, a slow machine does not
failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what, flush=True)
    if not ok:
        failures.append(what)


class Chromium:
    """Headless Chromium with the DevTools protocol on fds 3 (commands in)
    and 4 (replies and events out), NUL-separated JSON."""

    def __init__(self, profile):
        exe = shutil.which("chromium") or shutil.which("chromium-browser")
        if not exe:
            raise SystemExit("chromium not found (Debian: apt-get install chromium; tools/install_deps.sh test does it)")
        cmd_r, self.cmd_w = os.pipe()
        self.out_r, out_w = os.pipe()
        cmd_r, out_w = (self._above_4(fd) for fd in (cmd_r, out_w))
        args = ["--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--mute-audio", "--hide-scrollbars",
                "--force-device-scale-factor=1", f"--user-data-dir={profile}", "about:blank"]
        # bash puts the pipe ends on fds 3 and 4, then becomes chromium; in
        # its own session, so that stop() can end every process it starts.
        self.proc = subprocess.Popen(["bash", "-c", f'exec "$0" "$@" 3<&{cmd_r} 4>&{out_w} {cmd_r}<&- {out_w}>&-', exe] + args,
                                     pass_fds=(cmd_r, out_w), start_new_session=True,
                                     stdout=subprocess.DEVNULL, stderr=open(os.path.join(profile, "stderr.txt"), "wb"))
        os.close(cmd_r)
        os.close(out_w)
        self.next_id = 0
        self.inbox = queue.Queue()
        self.events = []
        threading.Thread(target=self._read, daemon=True).start()

    @staticmethod
    def _above_4(fd):
        """fd moved to 10 or above, clear of the 3 and 4 it is copied to."""
        high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
        os.close(fd)
        return high

    def _read(self):
        buf = b""
        while True:
            chunk = os.read(self.out_r, 1 << 16)
            if not chunk:
                self.inbox.put(None)
                return
            buf += chunk
            while b"\0" in buf:
                msg, buf = buf.split(b"\0", 1)
                self.inbox.put(json.loads(msg))

    def send(self, method, session=None, **params):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self.cmd_w, json.dumps(msg).encode() + b"\0")
        while True:
            try:
                reply = self.inbox.get(timeout=DEADLINE)
            except queue.Empty:
                raise RuntimeError(f"{method}: no reply in {DEADLINE:.0f} s") from None
            if reply is None:
                raise RuntimeError(f"{method}: chromium exited (see its stderr.txt)")
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method):
        while True:
            for i, e in enumerate(self.events):
                if e.get("method") == method:
                    return self.events.pop(i)
            reply = self.inbox.get(timeout=DEADLINE)
            if reply is None:
                raise RuntimeError(f"waiting for {method}: chromium exited")
            self.events.append(reply)

    def stop(self):
        try:
            if self.proc.poll() is None:
                self.send("Browser.close")
            self.proc.wait(timeout=10)
        except Exception:  # noqa: BLE001 - whatever happened, the processes go
            pass
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        else:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # helpers chromium left in its session
            except ProcessLookupError:
                pass
        os.close(self.cmd_w)
        os.close(self.out_r)


class Page:
    def __init__(self, browser):
        self.b = browser
        target = browser.send("Target.createTarget", url="about:blank")["targetId"]
        self.s = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Network", "DOM"):
            self.cmd(f"{domain}.enable")
        self.cmd("Emulation.setDeviceMetricsOverride", width=1100, height=1000, deviceScaleFactor=1, mobile=False)

    def cmd(self, method, **params):
        return self.b.send(method, session=self.s, **params)

    def js(self, expr):
        """The value of a JavaScript expression (awaited if a promise)."""
        r = self.cmd("Runtime.evaluate", expression=expr, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise RuntimeError(f"{expr[:80]}: {d.get('exception', {}).get('description') or d.get('text')}")
        return r["result"].get("value")

    def settle(self, before):
        """After an action that queued a job: waits for the queue, returns the message."""
        return self.js(f"""(async () => {{
            while (vitWeb.jobs <= {before}) await new Promise((r) => setTimeout(r, 5));
            await vitWeb.idle();
            return {{kind: document.getElementById('message').dataset.kind, text: document.getElementById('message').textContent}};
        }})()""")

    def act(self, action):
        """Runs action() (a click, a file), waits for what it queued; the page's message."""
        before = self.js("vitWeb.jobs")
        action()
        return self.settle(before)

    def choose_file(self, selector, path):
        root = self.cmd("DOM.getDocument")["root"]["nodeId"]
        node = self.cmd("DOM.querySelector", nodeId=root, selector=selector)["nodeId"]
        return self.act(lambda: self.cmd("DOM.setFileInputFiles", files=[os.path.abspath(path)], nodeId=node))

    def drop_file(self, path):
        """Drags a file from outside onto the page's drop zone."""
        box = self.js("(() => { const r = document.getElementById('drop').getBoundingClientRect(); return [r.x + r.width / 2, r.y + 10]; })()")
        data = {"items": [], "files": [os.path.abspath(path)], "dragOperationsMask": 1}

        def drag():
            for kind in ("dragEnter", "dragOver", "drop"):
                self.cmd("Input.dispatchDragEvent", type=kind, x=box[0], y=box[1], data=data)
        return self.act(drag)

    def click(self, selector):
        return self.act(lambda: self.js(f"document.querySelector({json.dumps(selector)}).click()"))

    def screenshot(self, path):
        png = base64.b64decode(self.cmd("Page.captureScreenshot", format="png")["data"])
        with open(path, "wb") as f:
            f.write(png)
        return Image.open(io.BytesIO(png)).convert("RGB")


def native_classify(vit, model, image):
    """`vit classify --top <all>`: [(percent, class, label)], best first."""
    out = subprocess.run([vit, "classify", model, image, "--top", "100000"], capture_output=True, text=True, check=True).stdout
    rows = [re.match(r"\s*([\d.]+)%\s+(\d+)\s+(.*)$", line) for line in out.splitlines()]
    return [(float(m[1]), int(m[2]), m[3]) for m in rows if m]


def native_probs(vit, model, x, work):
    """`vit run` on the page's model input x: softmax of its logits."""
    np.save(os.path.join(work, "x.npy"), x)
    subprocess.run([vit, "run", model, os.path.join(work, "x.npy"), os.path.join(work, "y.npy")], check=True)
    y = np.load(os.path.join(work, "y.npy")).astype(np.float64)[0]
    e = np.exp(y - y.max())
    return e / e.sum()


def compare(page, vit, model, image, work, what, want_input=None):
    """The page's last result for `image` against the native CLI's."""
    m = page.js("vitWeb.model")
    last = page.js("vitWeb.last") or {"name": None, "probs": [], "input": []}
    check(last["name"] == os.path.basename(image), f"{what}: the page's last result is this image's ({last['name']})")
    if last["name"] != os.path.basename(image):
        return None
    probs = np.array(last["probs"])
    x = np.array(last["input"], dtype=np.float32).reshape(1, m["channels"], m["crop"], m["crop"])
    rows = native_classify(vit, model, image)
    best = int(np.argmax(probs))
    check(rows and rows[0][1] == best and rows[0][2] == m["labels"][best],
          f"{what}: top class {best} '{m['labels'][best]}' as `vit classify` ({rows[0][1:] if rows else 'nothing'})")
    worst = max(abs(100 * probs[k] - pct) for pct, k, _ in rows) if rows else 1e9
    check(len(rows) == m["classes"] and worst <= 0.005 + 1e-4,
          f"{what}: {len(rows)} percentages as `vit classify` prints them (largest difference {worst:.4f}, rounding 0.005)")
    d = float(np.abs(probs - native_probs(vit, model, x, work)).max())
    check(d <= 1e-5, f"{what}: probabilities equal `vit run` on the page's input within 1e-5 (max |diff| {d:.2e})")
    if want_input is not None:
        d = float(np.abs(x - want_input).max())
        check(d <= 1e-6, f"{what}: the page's input is (pixel / 255 - mean) / std of the idx image (max |diff| {d:.2e})")
    shown = page.js("Array.from(document.querySelectorAll('#top .label'), (e) => e.textContent)")
    check(shown and shown[0] == m["labels"][best], f"{what}: the page shows '{shown[0] if shown else ''}' first")
    return probs


def native_map(vit, model, image, method, cls, work):
    """`vit maps --method M --class K --npy`: the raw map."""
    out = os.path.join(work, "maps")
    subprocess.run([vit, "maps", model, image, "--out", out, "--method", method, "--class", str(cls), "--npy"],
                   check=True, capture_output=True)
    return np.load(os.path.join(out, f"{os.path.splitext(os.path.basename(image))[0]}_{method}_{cls}.npy"))


def pick(page, select, value):
    """Sets a <select> as a user does; waits for what it queued; the page's message."""
    return page.act(lambda: page.js(f"(() => {{ const s = document.getElementById({json.dumps(select)}); "
                                    f"s.value = {json.dumps(str(value))}; s.dispatchEvent(new Event('change')); }})()"))


def colourful(img, box):
    """Pixels in box (x, y, w, h) of a screenshot that are coloured, not grey."""
    x, y, w, h = (int(round(v)) for v in box)
    a = np.asarray(img.crop((x + 2, y + 2, x + w - 2, y + h - 2))).astype(int)
    return float(((a.max(axis=2) - a.min(axis=2)) > 40).mean()), a


def check_pictures(page, shot, what):
    """The rollout and every head's map drawn, in colour, in the screenshot."""
    boxes = page.js("""Array.from(document.querySelectorAll('#map, #heads img'), (e) => {
        const r = e.getBoundingClientRect();
        return {x: r.x, y: r.y, w: r.width, h: r.height, ok: e.complete && e.naturalWidth > 0};
    })""")
    n = page.js("vitWeb.model.heads") + 2
    check(len(boxes) == n and all(b["ok"] for b in boxes), f"{what}: the rollout and {n - 1} head pictures are loaded")
    fractions, pixels = [], []
    for b in boxes:
        f, a = colourful(shot, (b["x"], b["y"], b["w"], b["h"]))
        fractions.append(f)
        pixels.append(a)
    check(boxes and min(fractions) > 0.5, f"{what}: each is a colour map in the screenshot (coloured share {min(fractions or [0]):.2f} or more)")
    return pixels


METHODS = ("grad-rollout", "chefer", "legrad", "gradcam", "saliency", "gxi", "ig")
MAP_RTOL = 1e-4  # of the map's largest |value|: WebAssembly's sums against the native build's


def map_picture(page, shot):
    """The big map's pixels in a screenshot, if it is loaded and in colour (else None)."""
    b = page.js("""(() => { const e = document.getElementById('map'); const r = e.getBoundingClientRect();
        return {x: r.x, y: r.y, w: r.width, h: r.height, ok: e.complete && e.naturalWidth > 0}; })()""")
    f, a = colourful(shot, (b["x"], b["y"], b["w"], b["h"]))
    return a if b["ok"] and f > 0.5 else None


def check_map(page, vit, model, image, work, log, select, value):
    """Picks value in the method or class picker: the map drawn in colour,
    its raw values `vit maps --method M --class K --npy`'s. (map, picture)."""
    name = os.path.basename(image)
    msg = pick(page, select, value)
    got = page.js("vitWeb.explained")
    method, cls = page.js("[document.getElementById('method').value, +document.getElementById('class').value]")
    ok = msg["kind"] == "ok" and got is not None and got["method"] == method and got["cls"] == cls
    check(ok, f"{name}: {method} for class {cls} drawn: {msg['text']!r}")
    if not ok:
        return None, None
    mp = np.array(got["map"], np.float32).reshape(got["side"], got["side"])
    want = native_map(vit, model, image, method, cls, work)
    d = float(np.abs(mp - want).max() / max(np.abs(want).max(), 1e-30)) if mp.shape == want.shape else 1e9
    check(d <= MAP_RTOL, f"{name}: {method} for class {cls}: the {mp.shape[0]}x{mp.shape[1]} map is "
                         f"`vit maps --method {method} --class {cls} --npy`'s (max |diff| {d:.1e} of its largest)")
    shot = page.screenshot(os.path.join(log, f"web_{method}_{cls}.png"))
    picture = map_picture(page, shot)
    check(picture is not None, f"{name}: {method} for class {cls}: the map is drawn in colour (web_{method}_{cls}.png)")
    return mp, picture


def check_explanations(page, vit, model, image, probs, work, log):
    """Each method for the predicted class, then Chefer's for the second
    likeliest: drawn, and the raw values `vit maps --method M --class K`'s."""
    name = os.path.basename(image)
    best, second = (int(k) for k in np.argsort(-probs, kind="stable")[:2])
    picker = page.js("(() => { const c = document.getElementById('class'); "
                     "return {value: c.value, disabled: c.disabled, n: c.options.length, first: c.options[0].text}; })()")
    check(picker["value"] == str(best) and picker["disabled"] and picker["n"] == len(probs),
          f"{name}: the class picker lists {picker['n']} classes, the predicted {best} picked ({picker['first']!r}), "
          "unused by attention")
    for method in sorted(METHODS, key=lambda m: m == "chefer"):  # chefer last
        mp, picture = check_map(page, vit, model, image, work, log, "method", method)
    mp2, picture2 = check_map(page, vit, model, image, work, log, "class", second)  # chefer still picked
    check(mp is not None and mp2 is not None and float(np.abs(mp - mp2).max()) > 0 and
          picture is not None and picture2 is not None and float(np.abs(picture - picture2).mean()) > 1,
          f"{name}: chefer's map for class {second} differs from class {best}'s, values and picture")
    msg = pick(page, "method", "attention")
    shot = page.screenshot(os.path.join(log, "web_attention_again.png"))
    check(msg["kind"] == "ok" and page.js("vitWeb.explained") is None and page.js("document.getElementById('class').disabled"),
          f"{name}: back to attention: {msg['text']!r}")
    check_pictures(page, shot, "back to attention (web_attention_again.png)")


def fashion_inputs(samples, model_info):
    """(pixel / 255 - mean) / std of each bundled image's idx pixels, float32."""
    with gzip.open(os.path.join(FASHION, "t10k-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
    mean, std = np.float32(model_info["mean"][0]), np.float32(model_info["std"][0])
    return {s["file"]: ((images[s["index"]].astype(np.float32) / np.float32(255) - mean) / std).reshape(1, 1, 28, 28) for s in samples}


def run(web, vit, log, work):
    model = os.path.join(web, "fashion_vit.safetensors")
    fixtures = os.path.join(ROOT, "tests", "fixtures")
    with Server(web) as server:
        browser = Chromium(os.path.join(work, "profile"))
        try:
            page = Page(browser)
            page.cmd("Page.navigate", url=server.url + "index.html")
            browser.wait_event("Page.loadEventFired")
            msg = page.settle(0)
            info = page.js("vitWeb.model")
            check(msg["kind"] == "ok" and info and info["depth"] == 4 and info["heads"] == 4,
                  f"the default model loads: {msg['text']!r}")
            check(info["labels"][9] == "Ankle boot", "labels come from the model's metadata")
            samples = page.js("fetch('samples/samples.json').then((r) => r.json())")
            want = fashion_inputs(samples, info)
            first = samples[0]["file"]

            # The first screen, without a click: the first sample classified, its maps drawn.
            last = page.js("vitWeb.last")
            check(last is not None and last["name"] == first, f"the first screen: {first} classified without a click ({last and last['name']})")
            check(page.js("!document.getElementById('result').hidden && document.querySelectorAll('#top li').length > 0"),
                  "the first screen shows the classes")
            shot = page.screenshot(os.path.join(log, "web_first_screen.png"))
            check_pictures(page, shot, "screenshot web_first_screen.png (no click)")
            compare(page, vit, model, os.path.join(web, "samples", first), work, f"the first screen's {first}", want[first])
            check(page.js("document.getElementById('model-warning').hidden"), "the shipped model: no untrained warning")

            # The bundled images, each against the native CLI.
            results = {}
            for s in samples:
                page.click(f"button.sample[data-file='{s['file']}']")
                results[s["file"]] = compare(page, vit, model, os.path.join(web, "samples", s["file"]), work,
                                             f"{s['file']} ({s['label']})", want[s["file"]])
                if s is samples[0]:
                    shot = page.screenshot(os.path.join(log, "web_classified.png"))
                    last_layer = check_pictures(page, shot, "screenshot web_classified.png")
                    ms = page.js("vitWeb.last.forwardMs")
                    timing = page.js("document.getElementById('timing').textContent")
                    check(ms > 0 and timing.startswith("forward "), f"the forward's time is shown: {timing!r}")
                    pick(page, "layer", 0)
                    shot = page.screenshot(os.path.join(log, "web_layer0.png"))
                    layer0 = check_pictures(page, shot, "screenshot web_layer0.png (layer selector at 0)")
                    differ = [float(np.abs(a - b).mean()) > 1 for a, b in zip(layer0[1:], last_layer[1:]) if a.shape == b.shape]
                    check(len(differ) == info["heads"] + 1 and all(differ), "layer 0's head maps differ from the last layer's")

            # The map and class pickers, against `vit maps --method`.
            page.click(f"button.sample[data-file='{first}']")
            check_explanations(page, vit, model, os.path.join(web, "samples", first), results[first], work, log)

            # Grey and RGBA files, converted as the CLI converts them; one
            # dropped on the page, one chosen.
            for name, how in (("gray.png", "dropped"), ("rgba.png", "chosen")):
                path = os.path.join(fixtures, "maps", name)
                msg = page.drop_file(path) if how == "dropped" else page.choose_file("#image-file", path)
                check(msg["kind"] == "ok", f"{name}, {how}, is classified: {msg['text']!r}")
                compare(page, vit, model, path, work, f"{name} on the default model")

            # Bad input: a message each, and the page goes on as before.
            def same_as_before(what):
                page.click(f"button.sample[data-file='{first}']")
                d = float(np.abs(np.array(page.js("vitWeb.last.probs")) - results[first]).max())
                check(d == 0.0, f"after {what}, {first} is classified as before (max |diff| {d:.1e})")

            with open(model, "rb") as f:
                data = f.read()
            bad = {"truncated.safetensors": data[:len(data) // 2], "garbage.safetensors": b"not a safetensors file at all\n",
                   "no_std.safetensors": data.replace(b'"input_std"', b'"input_xtd"', 1)}  # a mean without its std
            for name, body in bad.items():
                path = os.path.join(work, name)
                with open(path, "wb") as f:
                    f.write(body)
                msg = page.choose_file("#model-file", path)
                check(msg["kind"] == "error" and msg["text"].startswith(name + ": ") and len(msg["text"]) > len(name) + 10,
                      f"a corrupt model ({name}) is refused with a message: {msg['text']!r}")
                same_as_before(f"the corrupt {name}")
            msg = page.choose_file("#model-file", os.path.join(ROOT, "models", "fashion_mlp.safetensors"))
            check(msg["kind"] == "error" and "ViT classifier" in msg["text"], f"a model that is not a ViT classifier: {msg['text']!r}")
            page.js("vitWeb.maxModelBytes = 100000")
            msg = page.choose_file("#model-file", model)
            page.js("vitWeb.maxModelBytes = 1 << 30")
            check(msg["kind"] == "error" and "over the 97.7 KB this page takes" in msg["text"], f"a model past the size limit: {msg['text']!r}")
            msg = page.choose_file("#image-file", os.path.join(ROOT, "README.md"))
            check(msg["kind"] == "error" and msg["text"].startswith("README.md: image: "), f"a file that is not an image: {msg['text']!r}")
            same_as_before("these refusals")

            # An untrained export: a warning beside the model, as `vit classify` gives.
            untrained = os.path.join(work, "untrained.safetensors")
            subprocess.run([sys.executable, os.path.join(ROOT, "tools", "export.py"),
                            "torchvision:VisionTransformer:image_size=32,patch_size=8,num_layers=1,num_heads=2,hidden_dim=16,mlp_dim=20,num_classes=4",
                            untrained], check=True, capture_output=True)
            msg = page.choose_file("#model-file", untrained)
            warning = page.js("(() => { const w = document.getElementById('model-warning'); return w.hidden ? '' : w.textContent; })()")
            check(msg["kind"] == "ok" and "untrained weights (random initialisation, head all zeros)" in warning,
                  f"an untrained model: the page warns: {warning!r}")
            page.screenshot(os.path.join(log, "web_untrained.png"))

            # A BF16 file classifies, but the reverse pass is F32's: vit.h's reason, and the page goes on.
            bf16 = os.path.join(work, "bf16.safetensors")
            subprocess.run([sys.executable, os.path.join(ROOT, "tools", "export.py"), "--from", model, "--dtype", "BF16", bf16],
                           check=True, capture_output=True)
            msg = page.choose_file("#model-file", bf16)
            check(msg["kind"] == "ok", f"a BF16 model loads: {msg['text']!r}")
            msg = page.click(f"button.sample[data-file='{first}']")
            check(msg["kind"] == "ok", f"the BF16 model classifies {first}: {msg['text']!r}")
            msg = pick(page, "method", "chefer")
            check(msg["kind"] == "error" and "the reverse pass needs F32 weights" in msg["text"] and
                  page.js("vitWeb.explained") is None and page.js("document.querySelectorAll('#top li').length") > 0,
                  f"a BF16 model's explanation is refused with vit.h's reason: {msg['text']!r}")
            page.screenshot(os.path.join(log, "web_bf16_refused.png"))
            msg = pick(page, "method", "attention")
            check(msg["kind"] == "ok" and page.js("document.getElementById('map').naturalWidth") > 0,
                  f"then attention draws the BF16 model's rollout: {msg['text']!r}")

            # Another model: an RGB ViT with ImageNet's preprocessing.
            other = os.path.join(fixtures, "vit_tv.safetensors")
            msg = page.choose_file("#model-file", other)
            check(msg["kind"] == "ok" and page.js("vitWeb.model.channels") == 3, f"an RGB ViT from a file: {msg['text']!r}")
            check(page.js("document.getElementById('model-warning').hidden"), "a model without the untrained record: no warning")
            for name in ("rgba.png", "gray.png"):
                path = os.path.join(fixtures, "maps", name)
                page.choose_file("#image-file", path)
                compare(page, vit, other, path, work, f"{name} on vit_tv.safetensors")
            check_map(page, vit, other, path, work, log, "method", "gxi")  # RGB pixels, ImageNet's preprocessing
            check_map(page, vit, other, path, work, log, "method", "legrad")
            pick(page, "method", "attention")
            page.screenshot(os.path.join(log, "web_rgb_model.png"))
            msg = page.click("#default-model")
            check(msg["kind"] == "ok" and page.js("vitWeb.model.channels") == 1, "the default model comes back with one click")
            same_as_before("switching models")

            # Everything the page fetched came from the loopback server.
            urls = [e["params"]["request"]["url"] for e in browser.events if e.get("method") == "Network.requestWillBeSent"]
            outside = [u for u in urls if not u.startswith((server.url, "blob:", "data:"))]
            check(urls and not outside, f"{len(urls)} requests, none beyond {server.url} {outside[:3]}")
            errors = [e for e in browser.events if e.get("method") == "Runtime.exceptionThrown"]
            check(not errors, f"no uncaught exceptions in the page {[e['params']['exceptionDetails'].get('text') for e in errors][:3]}")
        finally:
            browser.stop()


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    web, vit, log = sys.argv[1:]
    os.makedirs(log, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="vit_web_") as work:
        os.makedirs(os.path.join(work, "profile"))
        run(web, os.path.abspath(vit), log, work)
    print(f"{len(failures)} of the page's checks failed" if failures else "the page in Chromium matches the native CLI")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
