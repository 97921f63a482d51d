from orchestrator.vm.console import console_fault, fault_hint, kernel_cmdline, tail


def test_panic_line_is_a_fault():
    text = "[    1.2] foo\n[    1.3] Kernel panic - not syncing: VFS: Unable to mount root fs\n[ 1.4] ---[ end"
    assert console_fault(text) == "Kernel panic - not syncing: VFS: Unable to mount root fs"


def test_oops_and_bug_lines_are_faults():
    assert console_fault("[ 2.0] BUG: kernel NULL pointer dereference, address: 0\n").startswith("[ 2.0] BUG: kernel NULL")
    assert console_fault("[ 2.0] Oops: 0000 [#1] SMP\n") == "Oops: 0000 [#1] SMP"


def test_first_fault_wins_when_several_appear():
    text = "[ 1.0] BUG: unable to handle page fault\n[ 1.1] Oops: 0002\n[ 1.2] Kernel panic - not syncing: Fatal\n"
    assert "BUG: unable to handle page fault" in console_fault(text)


def test_agent_port_missing_is_a_fault_with_a_hint():
    line = 'vmbisect-agent: virtio-serial port "org.vmbisect.agent.0" did not appear within 30s\n'
    fault = console_fault(line)
    assert fault == line.strip() and "--initrd-modules-from" in fault_hint(fault)
    assert fault_hint("Kernel panic - not syncing: x") == ""


def test_clean_boot_log_has_no_fault():
    text = "[ 0.0] Linux version 6.1\n[ 0.5] sd 0:0:0:0: [sda] Attached SCSI disk\nvmbisect-agent: serving\n"
    assert console_fault(text) is None


def test_tail_keeps_last_lines():
    assert tail("\n".join(str(i) for i in range(100)) + "\n", 3) == "97\n98\n99"


def test_cmdline_panics_to_reboot_and_appends_user_args():
    cmdline = kernel_cmdline("scsi_mod.use_blk_mq=0")
    assert "panic=-1" in cmdline and "console=ttyS0" in cmdline and cmdline.endswith("scsi_mod.use_blk_mq=0")
