package main

// sysFinitModule is finit_module(2), which the frozen syscall package lacks on amd64.
const sysFinitModule = 313
