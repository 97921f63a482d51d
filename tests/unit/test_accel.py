
from orchestrator.accel import choose_accel


def probe_calls(result):
    calls = []

    def probe():
        calls.append(1)
        return result

    return probe, calls


def test_no_kvm_device_means_tcg_without_probing(tmp_path):
    probe, calls = probe_calls((True, ""))
    choice = choose_accel(probe, "7.2", tmp_path / "a.json", kvm_device=tmp_path / "kvm")
    assert choice.accel == "tcg" and "does not exist" in choice.reason and calls == []


def test_kvm_device_present_but_probe_hangs_means_tcg_and_is_cached(tmp_path):
    dev = tmp_path / "kvm"
    dev.write_text("")
    probe, calls = probe_calls((False, "no answer from the guest agent within 25 s"))
    first = choose_accel(probe, "7.2", tmp_path / "a.json", kvm_device=dev)
    second = choose_accel(probe, "7.2", tmp_path / "a.json", kvm_device=dev)
    assert first.accel == second.accel == "tcg" and "probe guest under KVM failed" in first.reason
    assert first.probed and not second.probed and len(calls) == 1


def test_working_probe_chooses_kvm_and_new_qemu_reprobes(tmp_path):
    dev = tmp_path / "kvm"
    dev.write_text("")
    probe, calls = probe_calls((True, ""))
    assert choose_accel(probe, "7.2", tmp_path / "a.json", kvm_device=dev).accel == "kvm"
    choose_accel(probe, "8.0", tmp_path / "a.json", kvm_device=dev)
    choose_accel(probe, "8.0", tmp_path / "a.json", kvm_device=dev, reprobe=True)
    assert len(calls) == 3
