package main

import "syscall"

// sysFinitModule is finit_module(2).
const sysFinitModule = syscall.SYS_FINIT_MODULE
