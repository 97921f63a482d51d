module vmbisect/guest-agent

go 1.19
