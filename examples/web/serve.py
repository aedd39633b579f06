#!/usr/bin/env python3
"""Serves the attention-map page on the loopback interface only.

    serve.py [DIR] [--port N]      (default: build/web, port 8000; `make web-serve`)
Python's http.server, with the application/wasm type that WebAssembly's
streaming compile needs. tests/test_web.py serves the page through Server.
"""
import argparse
import functools
import http.server
import threading


class Handler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".wasm": "application/wasm", ".js": "text/javascript", ".safetensors": "application/octet-stream"}

    def end_headers(self):
        self.send_header("Cache-Control", "no-store")  # a rebuilt page is never mixed with an old one
        super().end_headers()


class QuietHandler(Handler):
    def log_message(self, *args):
        pass


class Server:
    """DIR on 127.0.0.1:port (0: any free port) from a background thread;
    a context manager that stops it on exit."""

    def __init__(self, directory, port=0, quiet=True):
        handler = functools.partial(QuietHandler if quiet else Handler, directory=directory)
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", nargs="?", default="build/web")
    ap.add_argument("--port", type=int, default=8000)
    args = ap.parse_args()
    with Server(args.dir, args.port, quiet=False) as s:
        print(f"serving {args.dir} at {s.url} (Ctrl-C stops)", flush=True)
        try:
            s.thread.join()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
