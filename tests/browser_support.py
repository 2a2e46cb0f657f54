"""Debian's Chromium, headless and offline, as the tests' browser: the DOM after the page's own
script ran (--dump-dom), what the page wrote to its console (Chromium logs each message as a
`:CONSOLE` line on stderr), and a screenshot."""

import subprocess
from html.parser import HTMLParser
from pathlib import Path

from tests import kits

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--enable-logging=stderr", "--v=0",
         # offline: every host name resolves nowhere, so a page that fetched a CDN would fail visibly
         "--host-resolver-rules=MAP * ~NOTFOUND"]


def _chromium(args, profile: Path, timeout=120):
    browser = kits.require("chromium")
    proc = subprocess.run([browser, *FLAGS, "--user-data-dir=%s" % profile, *args], capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL, start_new_session=True)
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    return proc, console


def load(url: str, profile: Path):
    """(DOM as serialized after scripts ran, console lines)."""
    proc, console = _chromium(["--dump-dom", url], profile)
    assert proc.returncode == 0 and proc.stdout, proc.stderr[-2000:]
    return proc.stdout, console


def screenshot(url: str, profile: Path, png: Path, size=(1600, 1000)):
    proc, console = _chromium(["--screenshot=%s" % png, "--window-size=%d,%d" % size, "--hide-scrollbars", url],
                              profile)
    assert png.exists(), proc.stderr[-2000:]
    return console


def count_colour(png: Path, rgb) -> int:
    """Pixels of exactly this colour in the screenshot."""
    from PIL import Image

    with Image.open(png) as image:
        return sum(count for count, colour in image.convert("RGB").getcolors(maxcolors=1 << 24) if colour == rgb)


class Dom(HTMLParser):
    """The few things the tests read from the page: group headers, and the cells of each row."""

    def __init__(self, text: str):
        super().__init__()
        self.groups, self.rows, self.body, self._row, self._cell = [], {}, {}, None, None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = set((attrs.get("class") or "").split())
        if tag == "body":
            self.body = attrs
        elif tag == "th" and "group" in classes:
            self.groups.append({"name": attrs.get("data-type"), "nodes": attrs["data-nodes"].split(),
                                "hidden": "hidden" in classes})
        elif tag == "tr" and "data-fact" in attrs:
            self._row = self.rows.setdefault(attrs["data-fact"], {"classes": classes, "cells": []})
        elif tag == "td" and self._row is not None:
            self._cell = {"classes": classes, "text": ""}
            self._row["cells"].append(self._cell)

    def handle_data(self, data):
        if self._cell is not None:
            self._cell["text"] += data

    def handle_endtag(self, tag):
        if tag == "td":
            self._cell = None
        elif tag == "tr":
            self._row = None
