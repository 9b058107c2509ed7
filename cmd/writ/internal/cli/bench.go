package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/writhq/writ/sandbox/tiers"
)

func newBench(e *env) *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Measure Writ on this host, each figure beside a baseline from the same run"}
	cmd.AddCommand(newBenchSandbox(e), newBenchAdmit(e), newBenchE2E(e), newBenchFleet(e), newBenchFleetServer(e), newBenchMCP(e),
		newBenchMCPEcho(e), newBenchLoad(e), newBenchLoadEchoServer(e), newBenchLoadSandbox(e))
	return cmd
}

func newBenchSandbox(e *env) *cobra.Command {
	var names []string
	var n int
	var echo, echoWasm, rootfs, image string
	cmd := &cobra.Command{
		Use:   "sandbox [--tier T]... [--n N] [--rootfs DIR | --image TAR]",
		Short: "Start time of each sandbox tier for the echo tool, as a ratio to its raw baseline",
		Long: `Run the echo tool N times in each tier, alternating with its raw baseline in the
same process: fork/exec of the echo binary (process), bwrap --ro-bind / / with the
tier's namespaces (bwrap), runc run of the same bundle (runc), runsc run of the same bundle (gvisor), and a wazero
instantiate and call of the same compiled module (wasm). Prints the medians, their
ratio and this process's CPU time per run of each (for the wasm tier, which runs in
the process, the whole run). The wasm tier is measured three times: with the echo
module, with the echo module and no memory image (wazero applying its data segments
at every run), and with echowasm's module (no language runtime: the tier's floor).
A tier this host cannot run is reported with its reason.
The echo tool is bin/tools/echo and bin/tools/echo.wasm beside this binary
(make build). The runc and gvisor tiers need --rootfs or --image.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if n < 1 || n > 100000 {
				return errors.New("--n must be between 1 and 100000")
			}
			if echo == "" || echoWasm == "" {
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				dir := filepath.Join(filepath.Dir(exe), "tools")
				if echo == "" {
					echo = filepath.Join(dir, "echo")
				}
				if echoWasm == "" {
					echoWasm = filepath.Join(dir, "echo.wasm")
				}
			}
			cfg := tiers.DefaultConfig()
			cfg.Runc.RootFS, cfg.Runc.Image = rootfs, image
			if rootfs == "" && image == "" {
				cfg.Runc.RootFS = "/nonexistent-rootfs-give---rootfs"
			}
			cfg.Gvisor.OCI.RootFS, cfg.Gvisor.OCI.Image = cfg.Runc.RootFS, cfg.Runc.Image
			res := tiers.Bench(context.Background(), tiers.BenchConfig{Tiers: cfg, Names: names, N: n, Echo: echo, EchoWasm: echoWasm, WasmVariants: true})
			if e.output == "json" {
				return e.printJSON(res)
			}
			w := tabwriter.NewWriter(e.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "tier\ttool\tp50\traw p50\tratio\tcpu\traw cpu\tbaseline")
			for _, r := range res {
				if r.Error != "" {
					fmt.Fprintf(w, "%s\t%s\t-\t-\t-\t-\t-\tunavailable: %s\n", r.Tier, r.Tool, r.Error)
					continue
				}
				fmt.Fprintf(w, "%s\t%s\t%v\t%v\t%.2f\t%v\t%v\t%s\n", r.Tier, r.Tool, r.P50, r.RawP50, r.Ratio, r.CPU, r.RawCPU, r.Baseline)
			}
			return w.Flush()
		},
	}
	cmd.Flags().StringSliceVar(&names, "tier", nil, "tiers to measure (default: all)")
	cmd.Flags().IntVar(&n, "n", 50, "timed runs of each side")
	cmd.Flags().StringVar(&echo, "echo", "", "the echo tool built for this host (default: tools/echo beside writ)")
	cmd.Flags().StringVar(&echoWasm, "echo-wasm", "", "the echo tool as a wasip1 module (default: tools/echo.wasm beside writ)")
	cmd.Flags().StringVar(&rootfs, "rootfs", "", "root filesystem directory for the runc and gvisor tiers")
	cmd.Flags().StringVar(&image, "image", "", "OCI image layout tarball for the runc and gvisor tiers' root filesystem")
	return cmd
}
