// pool-monitor-cni, the CNI IPAM plugin the DaemonSet installs on each
// node: a small main over internal/plugin, where all of it lives (as the
// reference host-local plugin keeps its main apart from its backend).
package main

import (
	"os"

	"ipam-pool-monitor/cni-plugin/internal/plugin"
)

func main() {
	os.Exit(plugin.Main(os.Getenv, os.Stdin, os.Stdout))
}
