"""The design space: a mixed discrete encoding of the design schema, with explicit repair.

Every gene is an index into a list of choices. Each gene is either **hardware** (bought and cabled: family,
switch and NIC models, NICs per GPU, oversubscription, planes, transport, storage isolation, in-network reduction,
uplink speed) or **free policy** (routing, queue pairs, placement rule, PXN, and for a workload with serving jobs
the serving traffic class): :attr:`Gene.kind`, from the one
definition in :mod:`fabric.design.policy`. The placement rule is ``packed`` or ``rail_aligned``; a fragmented
cluster is a scenario (``fragmented``), never a gene. :meth:`DesignSpace.decode` turns a genome into a
:class:`~fabric.design.Design` after repairing combinations that cannot exist, and says which repairs it made:

- the transport follows the switch fabric (InfiniBand switches run ``infiniband``; Ethernet switches run ``roce``,
  ``tcp`` or ``uec``; an ``infiniband`` gene on Ethernet becomes ``roce``);
- the NIC must speak the switch's fabric: the same-speed NIC of that fabric, else the nearest speed;
- the GPU's host must feed the NICs (:mod:`fabric.catalog.compat`): NICs it cannot run at full speed are not
  genes at all (``excluded_nics`` says why), and ``nics_per_gpu`` is lowered to the largest allowed count whose
  NIC bandwidth per GPU the host feeds (two 400G NICs per H100 become one);
- in-network reduction only on InfiniBand (per-packet spraying on a reorder-intolerant transport, ``roce`` or
  ``tcp``, is kept: the evaluator charges its reordering penalty, docs/evaluator.md);
- two planes need a NIC with two ports: otherwise one plane;
- uplinks run at ``uplink_speed_factor`` x the NIC port speed when the switch's ports break out into that speed
  (:meth:`fabric.catalog.SwitchModel.lanes_at`), else at the largest allowed factor below it that they do (factor 1,
  the NIC speed, always works); factor 1 gives ``uplink_gbps = None``, so the designs of earlier searches keep
  their genomes' meaning; dragonfly router links stay at the NIC speed;
- genes that do not matter are set to one canonical value so equal designs have equal genomes: queue pairs
  only under ECMP, PXN only on rail-optimized fabrics, oversubscription and planes not on dragonfly.

Designs that are well-formed but cannot be built (too many endpoints for the radix and tiers, ...) are not
repaired: the evaluation marks them infeasible with the builder's message, and the search penalises them through
a violated constraint.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from fabric.catalog.compat import compatible_nics, host_nic_bps, nic_host_problem
from fabric.design import Design
from fabric.design.schema import SERVING_PRIORITIES
from fabric.design.policy import HARDWARE, POLICY, gene_kind
from fabric.errors import FabricError
from fabric.evaluate.placement import gpus_for_jobs
from fabric.search.constraints import ConstraintError, Constraints

__all__ = ["Gene", "DesignSpace"]


@dataclass(frozen=True)
class Gene:
    """One decision: its name and the values it may take."""

    name: str
    choices: tuple

    @property
    def kind(self) -> str:
        """``"free policy"`` or ``"hardware"`` (:func:`fabric.design.policy.gene_kind`)."""
        return gene_kind(self.name)


class DesignSpace:
    """The genes allowed by ``constraints`` over the hardware of ``catalog``. ``serving``: the workload has a
    serving job, so the search may also put its traffic in a class of its own (``serving_class``, the last gene, with
    the choices ``constraints.serving_classes``); without serving jobs the gene does not exist (it changes nothing)."""

    def __init__(self, constraints: Constraints, catalog=None, workload=None, *, serving: bool | None = None):
        from fabric.catalog import default_catalog

        self.constraints = c = constraints
        self.catalog = cat = catalog or default_catalog()
        switches = tuple(c.switch_models) if c.switch_models else tuple(cat.models("switches"))
        nics = tuple(c.nic_models) if c.nic_models else tuple(cat.models("nics"))
        for m in switches:
            cat.switch(m)
        for m in nics:
            cat.nic(m)
        #: True when the GPU system (scale-up domain) is a gene (constraint ``gpu_models``)
        self.system_mode = c.gpu_models is not None
        #: the GPU systems the search may choose (catalog GPU rows), the first one the baselines'
        self.systems = tuple(dict.fromkeys(c.gpu_models)) if self.system_mode else (c.gpu_model,)
        rows = [cat.gpu(m) for m in self.systems]
        self.gpu = gpu = rows[0]
        #: racks are packed to the smaller of the rack limit and 40.8 kW (docs/constraints.md)
        self.rack_budget_w = c.rack_budget_w
        self._jobs = _jobs_of(workload)
        if serving is None:     # the serving class is a gene when the workload has a serving job
            serving = any(getattr(j, "serving", None) is not None for j in self._jobs)
        self._fields = {g.model: self._fields_for(g) for g in rows}
        npg_allowed = [n for n in c.nics_per_gpu
                       if any(_whole(n * f["gpus_per_node"]) for f in self._fields.values())]
        fewest = min(npg_allowed, default=1.0)
        #: NIC models left out because no allowed GPU's host can run them at full speed: model -> reason
        self.excluded_nics = {m: why for m in nics
                              if all((why := nic_host_problem(g, cat.nic(m), fewest)) is not None for g in rows)}
        if self.excluded_nics and len(self.excluded_nics) == len(nics):
            fits = list(dict.fromkeys(n for g in rows for n in compatible_nics(cat, g.model, fewest)))
            asked = "allowed NIC models" if c.nic_models else "catalog NICs"
            hosts = " or ".join(f"{g.model} hosts, which feed at most {g.max_nic_bps_per_gpu / 1e9:g} Gb/s" for g in rows)
            raise ConstraintError(
                f"constraint 'nic_models': none of the {asked} ({', '.join(nics)}) runs at full speed on {hosts} "
                f"of NIC bandwidth per GPU (gpus.csv max_nic_gbps_per_gpu); "
                + (f"allow one of {', '.join(fits)}" if fits else "add a NIC that fits to the catalog"))
        nics = tuple(m for m in nics if m not in self.excluded_nics)
        oversub = tuple(o for o in c.oversubscriptions if o <= c.max_oversubscription)
        self.genes: tuple[Gene, ...] = (
            Gene("family", tuple(c.families)),
            Gene("switch_model", switches),
            Gene("nic_model", nics),
            Gene("nics_per_gpu", tuple(npg_allowed)),
            Gene("oversub_leaf", oversub),
            Gene("oversub_spine", oversub),
            Gene("planes", tuple(c.planes)),
            Gene("routing", tuple(c.routings)),
            Gene("qps_per_connection", tuple(c.qps)),
            Gene("transport", tuple(c.transports)),
            Gene("placement", tuple(c.placements)),
            Gene("pxn", (False, True)),
            Gene("storage_isolation", (False, True)),
            Gene("in_network_reduction", (False, True)),
            Gene("uplink_speed_factor", tuple(float(f) for f in c.uplink_speed_factors)),
        ) + self._region_genes(c, oversub) + (
            Gene("gpu_model", self.systems),
        ) + ((Gene("serving_class", tuple(bool(x) for x in c.serving_classes)),) if serving else ()) + (
            (Gene("serving_priority", SERVING_PRIORITIES), Gene("serving_routing", (None,) + tuple(c.routings)))
            if serving and True in c.serving_classes else
            ((Gene("serving_routing", (None,) + tuple(c.routings)),) if serving else ())) + (
            (Gene("storage_routing", (None,) + tuple(c.routings)),) if _has_storage(workload) else ())
        if not self.genes[3].choices:
            raise FabricError("no allowed nics_per_gpu gives a whole number of NICs per node")
        self.names = tuple(g.name for g in self.genes)
        self._index = {g.name: i for i, g in enumerate(self.genes)}
        self.upper = np.array([len(g.choices) - 1 for g in self.genes], dtype=np.int64)

    def _region_genes(self, c, oversub) -> tuple:
        """The genes of designs of regions (:mod:`fabric.search.region_genes`), when ``families`` allows them."""
        if "regions" not in c.families:
            return ()
        from fabric.design.regions import REGION_FAMILIES
        from fabric.search.region_genes import split_choices

        fams = tuple(f for f in REGION_FAMILIES if f in c.families) or REGION_FAMILIES
        systems = []
        for f in self._fields.values():
            dom = f["scale_up_size"] or f["gpus_per_node"]
            systems.append((int(f["gpus"]), math.lcm(int(f["gpus_per_node"]), int(dom))))
        return (Gene("region_split", split_choices(self._jobs, systems)), Gene("region_a_family", fams),
                Gene("region_b_family", fams), Gene("region_a_oversub", oversub), Gene("region_b_oversub", oversub))

    def _gene(self, name: str) -> Gene:
        return self.genes[self.names.index(name)]

    @property
    def policy_genes(self) -> tuple[str, ...]:
        """Names of the free-policy genes (changing them buys nothing)."""
        return tuple(g.name for g in self.genes if g.kind == POLICY)

    @property
    def hardware_genes(self) -> tuple[str, ...]:
        """Names of the hardware genes."""
        return tuple(g.name for g in self.genes if g.kind == HARDWARE)

    def unbuildable_planes(self) -> dict[int, str]:
        """Plane counts the constraints allow that no design of this space can have, with the reason: a NIC needs a
        multiple of the planes in ports (each plane gets whole ports), and a dragonfly is one plane. Shown beside the
        choice before a search, where the search would otherwise repair them away silently."""
        nics = [self.catalog.nic(m) for m in self.gene("nic_model").choices]
        fams = [f for f in self.gene("family").choices if f != "dragonfly"]
        out: dict[int, str] = {}
        for p in self.gene("planes").choices:
            if p <= 1:
                continue
            if not fams:
                out[p] = "a dragonfly is one plane"
                continue
            fit = [n.model for n in nics if n.ports % p == 0]
            if not fit:
                ports = ", ".join(sorted({f"{n.model} {n.ports}" for n in nics}))
                excluded = [m for m in self.excluded_nics
                            if self.catalog.nic(m).ports % p == 0]
                out[p] = (f"no allowed NIC has a multiple of {p} ports ({ports})"
                          + (f"; {', '.join(excluded)} would, but the host cannot feed it" if excluded else ""))
        return out

    def gene(self, name: str) -> Gene:
        """The gene called ``name``."""
        return self.genes[self._index[name]]

    def _fields_for(self, gpu) -> dict:
        """The design fields a GPU system sets: GPUs, GPUs per host, scale-up domain (and the rack budget)."""
        c = self.constraints
        if not self.system_mode:
            return {"gpus": c.gpus, "gpu_model": gpu.model, "gpus_per_node": c.gpus_per_node, "scale_up_size": None,
                    "rack_power_w": self.rack_budget_w}
        gpn = gpu.host_gpus
        dom = gpu.scale_up_domain_max if gpu.rack_scale else gpn
        unit = math.lcm(gpn, dom)
        gpus = math.ceil(c.gpus / unit) * unit
        if self._jobs:
            # enough whole domains to keep the workload's tensor/expert-parallel groups inside them
            gpus = max(gpus, math.ceil(gpus_for_jobs(self._jobs, dom, gpn) / unit) * unit)
        return {"gpus": gpus, "gpu_model": gpu.model, "gpus_per_node": gpn,
                "scale_up_size": dom if dom != gpn else None, "rack_power_w": self.rack_budget_w}

    def system_fields(self, gpu_model: str | None = None) -> dict:
        """The design fields of GPU system ``gpu_model`` (default: the first, the baselines'): ``gpus``,
        ``gpu_model``, ``gpus_per_node``, ``scale_up_size``, ``rack_power_w``."""
        return dict(self._fields[gpu_model or self.systems[0]])

    # ------------------------------------------------------------------ sizes
    @property
    def n_var(self) -> int:
        return len(self.genes)

    @property
    def size(self) -> int:
        """Number of genomes (before repair merges equal designs)."""
        return int(np.prod(self.upper + 1, dtype=object))

    # ------------------------------------------------------------------ decode / encode
    def values(self, x) -> dict:
        """Gene name -> chosen value (no repair)."""
        return {g.name: g.choices[int(i)] for g, i in zip(self.genes, x)}

    def decode(self, x) -> tuple[Design, tuple[str, ...]]:
        """The repaired design of genome ``x`` and the list of repairs made."""
        v = self.values(x)
        c, cat = self.constraints, self.catalog
        repairs: list[str] = []
        system = self._fields[v["gpu_model"]]
        gpu = cat.gpu(v["gpu_model"])
        sw = cat.switch(v["switch_model"])
        nic = cat.nic(v["nic_model"])
        if nic.fabric != sw.fabric:
            nic2 = self._nic_for(sw.fabric, nic.port_speed_bps, gpu)
            if nic2 is None:
                raise FabricError(f"no allowed NIC speaks {sw.fabric}; allow one in nic_models")
            repairs.append(f"nic {nic.model}->{nic2.model} ({sw.fabric} switch)")
            nic = nic2
        if nic_host_problem(gpu, nic, min(self.genes[3].choices)) is not None:
            nic2 = self._nic_for(sw.fabric, nic.port_speed_bps, gpu)
            if nic2 is None:
                raise FabricError(f"no allowed {sw.fabric} NIC runs on the {gpu.model} host; allow one in nic_models")
            repairs.append(f"nic {nic.model}->{nic2.model} ({gpu.model} host feeds "
                           f"{gpu.max_nic_bps_per_gpu / 1e9:g} Gb/s per GPU)")
            nic = nic2
        transport = v["transport"]
        if sw.fabric == "infiniband" and transport != "infiniband":
            repairs.append(f"transport {transport}->infiniband (InfiniBand switch)")
            transport = "infiniband"
        elif sw.fabric == "ethernet" and transport == "infiniband":
            repairs.append("transport infiniband->roce (Ethernet switch)")
            transport = "roce"
        routing = v["routing"]
        npg = float(v["nics_per_gpu"])
        gpn = system["gpus_per_node"]
        if not _whole(npg * gpn):
            whole = [n for n in self.genes[3].choices if _whole(n * gpn)]
            lower = max([n for n in whole if n <= npg] or whole or [1.0])
            repairs.append(f"nics_per_gpu {npg:g}->{float(lower):g} ({gpn}-GPU hosts)")
            npg = float(lower)
        limit = gpu.max_nic_bps_per_gpu
        if limit is not None and host_nic_bps(nic, npg) > limit * (1 + 1e-9):
            fit = [n for n in self.genes[3].choices if n <= npg and host_nic_bps(nic, n) <= limit * (1 + 1e-9)
                   and _whole(n * gpn)]
            lower = max(fit) if fit else min(self.genes[3].choices)
            repairs.append(f"nics_per_gpu {npg:g}->{float(lower):g} ({gpu.model} host feeds "
                           f"{limit / 1e9:g} Gb/s per GPU)")
            npg = float(lower)
        family = v["family"]
        planes = v["planes"]
        if planes > 1 and (nic.ports % planes or family == "dragonfly"):
            fit = [p for p in self.gene("planes").choices if p <= planes and nic.ports % p == 0]
            to = 1 if family == "dragonfly" else max(fit + [1])
            repairs.append(f"planes {planes}->{to} ({nic.model} has {nic.ports} port(s))" if family != "dragonfly"
                           else f"planes {planes}->1 (dragonfly)")
            planes = to
        inr = v["in_network_reduction"] and transport == "infiniband"
        o1, o2 = float(v["oversub_leaf"]), float(v["oversub_spine"])
        regions = None
        if family == "regions":
            from fabric.search.region_genes import regions_for

            dom = system["scale_up_size"] or system["gpus_per_node"]
            regions = regions_for(v["region_split"], v["region_a_family"], v["region_b_family"],
                                  float(v["region_a_oversub"]), float(v["region_b_oversub"]), o2,
                                  gpus=system["gpus"], gpus_per_node=system["gpus_per_node"], domain=dom,
                                  jobs=self._jobs)
            if regions is None:         # one region holds everything: the uniform design of its cabling
                repairs.append(f"regions -> {v['region_a_family']} (region A would hold the whole cluster)")
                family, o1 = v["region_a_family"], float(v["region_a_oversub"])
            else:
                o1 = o2 = 1.0
        pxn = v["pxn"] and (family == "rail_optimized" or (regions is not None and any(
            r["family"] == "rail_optimized" for r in regions)))
        qps = v["qps_per_connection"] if routing == "ecmp" else 1
        if family == "dragonfly":
            o1 = o2 = 1.0
        placement = v["placement"]
        serving_class = bool(v.get("serving_class", False))
        # traffic-class policies: canonical when they change nothing (a priority without a class, a class routed as
        # the rest)
        serving_priority = v.get("serving_priority", "strict") if serving_class else "strict"
        serving_routing = v.get("serving_routing")
        serving_routing = None if serving_routing == routing else serving_routing
        storage_routing = v.get("storage_routing")
        storage_routing = None if storage_routing == routing else storage_routing
        factor = self._uplink_factor(float(v["uplink_speed_factor"]), family, sw, nic, repairs)
        up_gbps = None if factor == 1.0 else factor * nic.port_speed_bps / 1e9
        if regions is not None:
            from fabric.design.regions import regions_from_value, regions_text

            label = f"regions [{regions_text(regions_from_value(regions))}]"
        else:
            label = None
        design = Design(
            name=(f"{gpu.model} " if self.system_mode else "")
            + _name(family, sw.model, nic.model, npg, o1, o2, planes, routing, qps,
                    transport, placement, pxn, bool(v["storage_isolation"]), inr, up_gbps, serving_class, label,
                    serving_priority, serving_routing, storage_routing),
            family=family, regions=regions, **system, nics_per_gpu=npg, nic_model=nic.model, switch_model=sw.model,
            oversubscription=(o1, o2), uplink_gbps=up_gbps, planes=planes, routing=routing, qps_per_connection=qps,
            transport=transport, in_network_reduction=inr, pxn=pxn, placement=placement,
            storage_isolation=bool(v["storage_isolation"]), serving_class=serving_class,
            serving_priority=serving_priority, serving_routing=serving_routing, storage_routing=storage_routing,
        )
        return design, tuple(repairs)

    def _uplink_factor(self, factor: float, family: str, sw, nic, repairs: list) -> float:
        """The uplink speed factor the switch can run (see the module docstring); notes a repair when it changes."""
        if factor == 1.0 or family == "dragonfly":
            return 1.0                                  # dragonfly: canonical value, the gene does not matter
        ok = [f for f in self.gene("uplink_speed_factor").choices
              if f <= factor and (f == 1.0 or sw.lanes_at(f * nic.port_speed_bps))]
        best = max(ok, default=1.0)
        if best != factor:
            repairs.append(f"uplinks {factor:g}x->{best:g}x the NIC speed ({sw.model} ports run "
                           f"{', '.join(f'{v / 1e9:g}G' for v in sw.breakout_speeds_bps())})")
        return best

    def encode(self, design: Design) -> np.ndarray | None:
        """The genome of ``design`` if every field is a choice of this space, else ``None``."""
        want = {
            "family": design.family, "switch_model": design.switch_model, "nic_model": design.nic_model,
            "nics_per_gpu": design.nics_per_gpu, "oversub_leaf": design.oversub(0), "oversub_spine": design.oversub(1),
            "planes": design.planes, "routing": design.routing, "qps_per_connection": design.qps_per_connection,
            "transport": design.transport, "placement": design.placement, "pxn": design.pxn,
            "storage_isolation": design.storage_isolation, "in_network_reduction": design.in_network_reduction,
            "uplink_speed_factor": self._factor_of(design), "gpu_model": design.gpu_model,
            "serving_class": bool(design.serving_class), "serving_priority": design.serving_priority,
            "serving_routing": design.serving_routing, "storage_routing": design.storage_routing,
        }
        if "region_split" in self._index:
            first = {n: self.gene(n).choices[0] for n in ("region_split", "region_a_family", "region_b_family",
                                                          "region_a_oversub", "region_b_oversub")}
            if design.family == "regions":
                rv = self._region_values(design)
                if rv is None:
                    return None
                want.update(rv)
                want["oversub_leaf"] = self.gene("oversub_leaf").choices[0]
            else:
                want.update(first)
        system = self._fields.get(design.gpu_model)
        if system is None or any(getattr(design, k) != v for k, v in system.items()):
            return None
        x = []
        for g in self.genes:
            try:
                x.append(g.choices.index(want[g.name]))
            except ValueError:
                return None
        return np.array(x, dtype=np.int64)

    def _region_values(self, design: Design) -> dict | None:
        """The region gene values of a design of regions this space made (None for one it could not make)."""
        from fabric.search.region_genes import region_gene_values, regions_for

        rv = region_gene_values(design)
        if rv is None:
            return None
        if isinstance(rv["region_split"], float):       # a share: the choice that sizes region A the same
            a = design.regions[0].nodes
            match = [s for s in self.gene("region_split").choices if isinstance(s, float) and (regions_for(
                s, "clos", "clos", 1.0, 1.0, 1.0, gpus=design.gpus, gpus_per_node=design.gpus_per_node,
                domain=design.domain_size, jobs=self._jobs) or [{"nodes": -1}])[0]["nodes"] == a]
            if not match:
                return None
            rv["region_split"] = match[0]
        return rv

    def _factor_of(self, design: Design) -> float | None:
        """The uplink speed factor of ``design`` (1.0 without ``uplink_gbps``), or None when the tiers differ."""
        if design.uplink_gbps is None:
            return 1.0
        leaf, spine = design.uplink_gbps
        if leaf != spine:
            return None
        nic_bps = self.catalog.nic(design.nic_model).port_speed_bps
        factor = leaf * 1e9 / nic_bps
        return next((f for f in self.gene("uplink_speed_factor").choices if math.isclose(f, factor, rel_tol=1e-9)),
                    None)

    def repair(self, x) -> np.ndarray:
        """The canonical genome of ``x``'s repaired design (equal designs get equal genomes)."""
        design, _ = self.decode(x)
        y = self.encode(design)
        return np.asarray(x, dtype=np.int64) if y is None else y

    def enumerate(self):
        """Every distinct repaired genome, in a fixed order (for exhaustive search)."""
        seen = set()
        for x in itertools.product(*[range(len(g.choices)) for g in self.genes]):
            y = tuple(self.repair(np.array(x)).tolist())
            if y not in seen:
                seen.add(y)
                yield np.array(y, dtype=np.int64)

    def _nic_for(self, fabric: str, speed_bps: float, gpu=None):
        allowed = [self.catalog.nic(m) for m in self.genes[2].choices]
        same = [n for n in allowed if n.fabric == fabric]
        if gpu is not None:
            fits = [n for n in same if nic_host_problem(gpu, n, min(self.genes[3].choices)) is None]
            same = fits or same
        if not same:
            return None
        return min(same, key=lambda n: (abs(math.log(n.port_speed_bps / speed_bps)), n.price_usd, n.model))


def _jobs_of(workload) -> list:
    """The compute jobs of a workload (of every workload of a robust objective), for sizing rack-scale designs."""
    if workload is None:
        return []
    if hasattr(workload, "jobs"):
        return [j for j in workload.jobs if j.kind != "storage"]
    wls = getattr(workload, "workloads", None) or []
    best: list = []
    for item in wls:
        wl = item[1] if isinstance(item, tuple) else item
        jobs = _jobs_of(wl)
        if sum(j.world_size for j in jobs) > sum(j.world_size for j in best):
            best = jobs
    return best


def _has_storage(workload) -> bool:
    """True when the workload (any workload of a robust objective) has a storage job that writes bursts."""
    if workload is None:
        return False
    parts = getattr(workload, "workloads", None)
    if parts:
        return any(_has_storage(item[1] if isinstance(item, tuple) else item) for item in parts)
    return any(j.kind == "storage" and j.burst_bytes for j in getattr(workload, "jobs", ()))


def _whole(x: float) -> bool:
    return abs(x - round(x)) < 1e-9 and round(x) >= 1


def _name(family, sw, nic, npg, o1, o2, planes, routing, qps, transport, placement, pxn, iso, inr,
          up_gbps=None, serving_class=False, regions_label=None, serving_priority="strict", serving_routing=None,
          storage_routing=None) -> str:
    over = f"{o1:g}:1" if o1 == o2 else f"{o1:g}:1/{o2:g}:1"
    if regions_label:
        family, over = regions_label, ""
    if up_gbps is not None:
        over += f" up{up_gbps:g}G"
    nics = f" {npg:g}/GPU" if npg != 1 else ""
    pl = f" x{planes} planes" if planes > 1 else ""
    q = f"/{qps}qp" if routing == "ecmp" else ""
    extras = "".join([" +PXN" if pxn else "", " +storage net" if iso else "", " +SHARP" if inr else "",
                      (" +serving class" + (" (weighted)" if serving_priority == "weighted" else ""))
                      if serving_class else "", f" serving:{serving_routing}" if serving_routing else "",
                      f" storage:{storage_routing}" if storage_routing else ""])
    return f"{family} {sw} {nic}{nics}{' ' + over if over else ''}{pl} {routing}{q} {transport} {placement}{extras}"
