"""The results browser: ``k2bench serve [RUNS_DIR]`` (``make serve``).

Builds the static pages of every run and scorecard under RUNS_DIR into
``RUNS_DIR/.site/`` (analysis/site.py), then serves them from the standard library's
HTTP server on 127.0.0.1 until Ctrl-C:

    /                  the pages (RUNS_DIR/.site)
    /runs/<path>       RUNS_DIR's files: manifests, summaries, a run's report/
    /docs/<path>       the repository's docs/, Markdown rendered as HTML (scorecards link there)

    k2bench serve [RUNS_DIR] [--port N] [--host H] [--build-only] [--screenshot DIR]
"""
from __future__ import annotations

import argparse
import html
import re
import sys
import threading
import urllib.parse
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from . import browser, catalog, site

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"


def heading_id(text: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as
    hyphens (so a scorecard's ``docs/...md#anchor`` lands where it does on GitHub)."""
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def markdown_page(path: Path) -> str:
    """A Markdown file of docs/ as a page, its headings with GitHub's anchors."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = md.parse(path.read_text())
    used: dict[str, int] = {}
    for heading, inline in zip(tokens, tokens[1:]):
        if heading.type == "heading_open":
            text = "".join(c.content for c in inline.children or [] if c.type in ("text", "code_inline"))
            base = heading_id(text)
            n = used.get(base, 0)
            used[base] = n + 1
            heading.attrSet("id", base if n == 0 else f"{base}-{n}")
    rel = path.relative_to(REPO).as_posix()
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'><link rel='icon' href='data:,'>"
            f"<title>{html.escape(rel)}</title><link rel='stylesheet' href='/site.css'></head><body>"
            f"<nav><a href='/index.html'>k2bench runs</a> <span class='muted'>· {html.escape(rel)}</span></nav>"
            f"<article class='doc'>{md.renderer.render(tokens, md.options, {})}</article></body></html>")


class Handler(SimpleHTTPRequestHandler):
    """Files of the site, of RUNS_DIR under /runs/ and of docs/ under /docs/; nothing
    outside them (a path that leaves its root by ``..`` or a link is not found)."""
    server: Server

    def translate_path(self, path: str) -> str:
        return str(self.server.locate(path))

    def do_GET(self):
        if urllib.parse.urlsplit(self.path).path == "/favicon.ico":  # asked by pages without one (reports)
            self.send_response(204)
            self.end_headers()
            return
        target = Path(self.translate_path(self.path))
        if target.suffix == ".md" and target.is_file() and target.resolve().is_relative_to(DOCS.resolve()):
            body = markdown_page(target).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()

    def end_headers(self):
        self.send_header("Cache-Control", "no-store")  # pages are rebuilt at every start
        super().end_headers()

    def log_message(self, format, *args):
        if self.server.verbose:
            super().log_message(format, *args)


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, runs_dir: Path, site_dir: Path, host: str = "127.0.0.1", port: int = 0,
                 verbose: bool = False):
        self.runs_dir, self.site_dir, self.verbose = Path(runs_dir), Path(site_dir), verbose
        self.mounts = {"runs": self.runs_dir, "docs": DOCS}
        super().__init__((host, port), Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/"

    def locate(self, raw: str) -> Path:
        parts = [p for p in urllib.parse.unquote(urllib.parse.urlsplit(raw).path).split("/") if p not in ("", ".")]
        nowhere = self.site_dir / "__not_found__"
        if ".." in parts:
            return nowhere
        root = self.mounts.get(parts[0]) if parts else None
        root, rest = (root, parts[1:]) if root is not None else (self.site_dir, parts)
        target = root.joinpath(*rest)
        try:
            inside = target.resolve().is_relative_to(root.resolve())
        except OSError:
            inside = False
        return target if inside else nowhere


def screenshots(server: Server, cards: list[dict], out: Path) -> list[Path]:
    """The index and every scorecard page as PNGs in ``out``."""
    pages = [("index.html", "index.png")]
    names: set[str] = set()
    for c in cards:
        name = re.sub(r"[^A-Za-z0-9._-]", "_", str(c["paper"]))
        while name in names:
            name += "-2"
        names.add(name)
        pages.append((f"scorecard-{c['slug']}.html", f"scorecard-{name}.png"))
    drv = browser.chromium()
    try:
        return [browser.screenshot(drv, server.url + page, out / png) for page, png in pages]
    finally:
        drv.quit()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="k2bench serve",
                                description="browse the runs of a runs directory: an index, one page per run, "
                                            "scorecards and two runs compared, served on this machine")
    p.add_argument("runs_dir", nargs="?", default="runs", metavar="RUNS_DIR", help="the runs directory (default runs/)")
    p.add_argument("--port", type=int, default=8000, help="port to listen on (0: any free port; default 8000)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--build-only", action="store_true", help="only write the pages into RUNS_DIR/.site")
    p.add_argument("--screenshot", metavar="DIR",
                   help="after building, save index.png and scorecard-<paper>.png into DIR (headless Chromium), "
                        "then exit")
    p.add_argument("--verbose", action="store_true", help="log every request")
    return p


def main(argv=None) -> int:
    """``k2bench serve`` (an entry point of group k2bench.commands in pyproject.toml) and
    ``python -m analysis.serve``."""
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    runs_dir = Path(args.runs_dir)
    if not runs_dir.is_dir():
        print(f"serve: {args.runs_dir}: no such runs directory (make local-run writes runs/)", file=sys.stderr)
        return 2
    try:
        out, cat = site.build(runs_dir, args.runs_dir)
    except OSError as e:
        print(f"serve: cannot write {runs_dir / catalog.SITE}: {e}", file=sys.stderr)
        return 2
    n, m = len(cat["runs"]), len(cat["scorecards"])
    print(f"serve: wrote {out}/ ({n} run{'s' * (n != 1)}, {m} scorecard{'s' * (m != 1)})")
    if args.build_only:
        return 0
    try:
        server = Server(runs_dir, out, args.host, 0 if args.screenshot else args.port, args.verbose)
    except OSError as e:
        print(f"serve: cannot listen on {args.host}:{args.port}: {e}", file=sys.stderr)
        return 2
    with server:
        if args.screenshot:
            thread = threading.Thread(target=server.serve_forever, daemon=True)
            thread.start()
            try:
                for path in screenshots(server, cat["scorecards"], Path(args.screenshot)):
                    print(f"serve: {path}")
            except browser.BrowserMissing as e:
                print(f"serve: {e}", file=sys.stderr)
                return 2
            finally:
                server.shutdown()
            return 0
        print(f"serve: {server.url} (Ctrl-C stops)", flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            print("serve: stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
