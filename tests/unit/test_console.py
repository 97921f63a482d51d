from orchestrator.vm.console import console_fault, excerpt, fault_hint, first_report, kernel_cmdline, tail


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


LOCKUP = """[  120.0] sd 0:0:0:5: [sdf] Attached SCSI disk
[  132.1] watchdog: BUG: soft lockup - CPU#2 stuck for 22s! [fio:412]
[  132.1] Modules linked in: virtio_scsi scsi_mod
[  132.1] CPU: 2 PID: 412 Comm: fio Not tainted 6.1.0-56-amd64 #1  Debian 6.1.158-1
[  132.1] RIP: 0010:_raw_spin_lock_irqsave+0x1d/0x30
""" + "".join(f"[  132.1]  frame_{i}+0x10/0x20\n" for i in range(60))


def test_a_soft_lockup_opens_a_kernel_report_but_is_no_boot_fault():
    assert first_report(LOCKUP) == (1, "watchdog: BUG: soft lockup - CPU#2 stuck for 22s! [fio:412]")
    assert console_fault(LOCKUP) is None


def test_stalls_hung_tasks_and_warnings_open_kernel_reports():
    assert first_report("[ 1.0] ok\n[ 9.0] rcu: INFO: rcu_sched detected stalls on CPUs/tasks:\n")[0] == 1
    assert first_report("[ 9.0] INFO: task fio:412 blocked for more than 120 seconds.\n")[0] == 0
    assert first_report("[ 9.0] WARNING: CPU: 1 PID: 0 at block/blk-mq.c:1234 x+0x1/0x2\n")[0] == 0
    assert first_report("[ 0.5] sd 0:0:0:0: [sda] Attached SCSI disk\n") is None


def test_excerpt_after_a_hang_keeps_the_report_s_opening_lines_and_the_tail():
    shown = excerpt(LOCKUP, first_report(LOCKUP), lines=5, head=3).splitlines()
    assert shown[:3] == LOCKUP.splitlines()[1:4] and shown[3] == "[...]"
    assert shown[4:] == LOCKUP.splitlines()[-5:]


def test_excerpt_is_the_tail_when_the_report_is_inside_it_or_absent():
    assert excerpt(LOCKUP, first_report(LOCKUP), lines=100) == tail(LOCKUP, 100)
    assert excerpt("a\nb\nc\n", None, lines=2) == "b\nc"
    assert excerpt(LOCKUP, first_report(LOCKUP), lines=58, head=12) == "\n".join(LOCKUP.splitlines()[1:])
