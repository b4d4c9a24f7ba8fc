"""The environment collector names the host CPU's microarchitecture from its CPUID family and model, since cloud
VMs mask the brand string (the lent H100's host reads "Intel(R) Xeon(R) Processor"; this machine "AMD EPYC")."""

from __future__ import annotations

import pytest
from paths import REPO

from collectors.core.machine import describe_cpu, microarchitecture
from gpuplan_schema.payloads import CpuInfo
from gpuplan_schema.results import load_machine


@pytest.mark.parametrize(("vendor", "family", "model", "stepping", "name"), [
    ("GenuineIntel", 6, 207, 2, "Emerald Rapids"),   # the lent H100's host (lscpu, 2026-11-26)
    ("GenuineIntel", 6, 143, 8, "Sapphire Rapids"),
    ("GenuineIntel", 6, 85, 7, "Cascade Lake"),       # AWS g4dn / p4d
    ("GenuineIntel", 6, 85, 4, "Skylake-SP"),
    ("GenuineIntel", 6, 79, 1, "Broadwell-SP"),       # AWS p3
    ("AuthenticAMD", 23, 49, 0, "Rome (Zen 2)"),      # AWS g5
    ("AuthenticAMD", 25, 1, 1, "Milan (Zen 3)"),      # AWS g6, p5
    ("AuthenticAMD", 25, 17, 1, "Genoa (Zen 4)"),
    ("GenuineIntel", 6, 151, 2, None),                # a desktop part: not in the table
    ("AuthenticAMD", 25, None, None, None),
])
def test_family_and_model_name_the_microarchitecture(vendor, family, model, stepping, name):
    assert microarchitecture(vendor, family, model, stepping) == name


def test_this_machines_cpu_is_described_from_its_own_cpuinfo():
    text = open("/proc/cpuinfo", encoding="utf-8").read()
    cpu = describe_cpu()
    assert f"model name\t: {cpu.model}" in text
    assert f"cpu family\t: {cpu.family}" in text and f"\nmodel\t\t: {cpu.model_number}\n" in text
    assert cpu.vendor in ("GenuineIntel", "AuthenticAMD")
    assert cpu.microarchitecture == microarchitecture(cpu.vendor, cpu.family, cpu.model_number, cpu.stepping)
    assert cpu.nominal_mhz and 500 < cpu.nominal_mhz < 6000
    assert cpu.virtualized == (" hypervisor " in text.split("flags", 1)[1].split("\n", 1)[0] + " ")
    assert cpu.l3_bytes is None or cpu.l3_bytes >= 1 << 20


def test_the_label_adds_the_microarchitecture_a_masked_brand_string_hides():
    masked = CpuInfo("Intel(R) Xeon(R) Processor", 16, 16, None, microarchitecture="Emerald Rapids")
    assert masked.label == "Intel(R) Xeon(R) Processor, Emerald Rapids"
    assert CpuInfo("AMD EPYC 7R13 Milan", 8, 4, None, microarchitecture="Milan (Zen 3)").label == "AMD EPYC 7R13 Milan"
    assert CpuInfo("AMD EPYC", 2, 2, None).label == "AMD EPYC"


def test_an_environment_document_of_collector_1_still_loads_without_them():
    machine = load_machine(REPO / "tests" / "fixtures" / "frozen" / "h100-80gb")
    cpu = machine.environment.cpu
    assert cpu.model == "Intel(R) Xeon(R) Processor" and cpu.family is None and cpu.microarchitecture is None
    assert cpu.label == cpu.model


def test_the_lent_h100s_host_is_named_by_environment_collector_2():
    """Collected on the lent H100 on 2026-11-26 (`python3 -m collectors --only environment`)."""
    machine = load_machine(REPO / "tests" / "fixtures" / "environment-v2" / "h100-80gb")
    cpu = machine.environment.cpu
    assert (cpu.vendor, cpu.family, cpu.model_number, cpu.microarchitecture) == \
        ("GenuineIntel", 6, 207, "Emerald Rapids")
    assert cpu.nominal_mhz == 2100.0 and cpu.l3_bytes == 300 * 2 ** 20 and cpu.virtualized
    assert cpu.label == "Intel(R) Xeon(R) Processor, Emerald Rapids"


def test_every_name_the_collector_gives_is_one_the_instance_catalog_accepts():
    """A measured host and a catalogued one compare by name: the collector's CPUID table and the catalog's
    `host_cpu.microarchitecture` use the same words (gpuplan_schema SERVER_MICROARCHITECTURES)."""
    from collectors.core import machine
    from gpuplan_schema.payloads.environment import SERVER_MICROARCHITECTURES
    named = {*machine._INTEL.values(), *(name for _, _, name in machine._AMD), "Skylake-SP", "Cascade Lake",
             "Cooper Lake"}
    assert named <= set(SERVER_MICROARCHITECTURES)
