module ipam-pool-monitor/cni-plugin

go 1.19
