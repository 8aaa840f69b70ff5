"""Port -> link mapping: which design link each counter port transmits onto.

A CSV file with the header ``switch,port,link``: ``switch`` and ``port`` as the counters name them, ``link`` the
direction the port transmits in, named as the fabric names it: ``leaf3-spine1`` (from leaf3 to spine1; switch
labels as ``fabric build`` and the scenarios' ``fail_links`` use them, ``@pN`` for a plane). Parallel cables between
two switches share one name: map each of their ports to it. :func:`mapping_template` writes every link direction of
a design with empty switch/port cells to fill in.
"""

from __future__ import annotations

import csv
import io

from fabric.audit.linkload import directed_links
from fabric.errors import ParseError
from fabric.workload.io import decode_text, read_input

__all__ = ["PortMap", "read_port_map", "mapping_template"]


class PortMap(dict):
    """(switch, port) -> link name, with ``ports_of`` link name -> [(switch, port)]."""

    @property
    def ports_of(self) -> dict[str, list[tuple[str, str]]]:
        out: dict[str, list] = {}
        for key, link in self.items():
            out.setdefault(link, []).append(key)
        return out


def read_port_map(name: str, raw: bytes, fabric) -> PortMap:
    """Read a mapping CSV and check every link name against ``fabric`` (errors name the line)."""
    text = decode_text(read_input(name, raw), name)
    rows = csv.reader(io.StringIO(text))
    header = next(rows, None)
    cols = [h.strip().lower() for h in (header or [])]
    if cols[:3] != ["switch", "port", "link"]:
        raise ParseError("the mapping's header must start with switch,port,link", source=f"{name}:1")
    links = directed_links(fabric)
    out = PortMap()
    count: dict[str, int] = {}
    for i, row in enumerate(rows, 2):
        if not row or all(not c.strip() for c in row) or row[0].strip().startswith("#"):
            continue
        where = f"{name}:{i}"
        if len(row) < 3:
            raise ParseError("expected switch,port,link", source=where)
        sw, port, link = (c.strip() for c in row[:3])
        if not sw or not port:
            continue                     # a template row not filled in
        if link not in links:
            example = next(iter(links), "none")
            raise ParseError(f"link {link!r} is not a switch-to-switch link of the design (names like {example}: "
                             f"from the first switch to the second)", source=where)
        if (sw, port) in out:
            raise ParseError(f"port {sw} {port} mapped twice", source=where)
        count[link] = count.get(link, 0) + 1
        if count[link] > links[link][2]:
            raise ParseError(f"more ports map to {link} than the {links[link][2]} cable(s) it has", source=where)
        out[(sw, port)] = link
    if not out:
        raise ParseError("the mapping maps no port", source=name)
    return out


def mapping_template(fabric) -> str:
    """A mapping CSV listing every link direction of ``fabric`` once per cable, switch and port left empty."""
    lines = ["switch,port,link"]
    for link, (_, _, cables, _) in sorted(directed_links(fabric).items()):
        lines += [f",,{link}"] * cables
    return "\n".join(lines) + "\n"
