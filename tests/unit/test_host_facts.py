from orchestrator.backends.host import distro_kernels, parse_qemu_version
from orchestrator.backends.libvirt_vm import domain_name, owner_pid


def test_qemu_version_parsed_from_real_output():
    out = "QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)\nCopyright (c) 2003-2022 Fabrice\n"
    assert parse_qemu_version(out) == "7.2.22"
    assert parse_qemu_version("something else") is None


def test_distro_kernels_need_modules_and_sort_by_release(tmp_path):
    boot, mods = tmp_path / "boot", tmp_path / "modules"
    for rel in ("6.1.0-9-amd64", "6.1.0-56-amd64", "5.10.0-1-amd64"):
        (boot / f"vmlinuz-{rel}").parent.mkdir(exist_ok=True)
        (boot / f"vmlinuz-{rel}").write_text("")
    for rel in ("6.1.0-9-amd64", "6.1.0-56-amd64"):
        (mods / rel).mkdir(parents=True)
        (mods / rel / "modules.dep").write_text("")
    assert [k.release for k in distro_kernels(boot, mods)] == ["6.1.0-9-amd64", "6.1.0-56-amd64"]


def test_domain_names_embed_owner_pid_and_foreign_names_are_ignored():
    name = domain_name(1234)
    assert name.startswith("vmbisect-1234-") and owner_pid(name) == 1234
    assert owner_pid("debian12") is None and owner_pid("vmbisect-x-y") is None
