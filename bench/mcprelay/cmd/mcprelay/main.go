// Command mcprelay serves a bare MCP relay over stdin and stdout for the
// gateway benchmark: `mcprelay sdk UPSTREAM` (the go-sdk's Server on its
// StdioTransport) or `mcprelay raw UPSTREAM` (no SDK). A program of its
// own, so that its resident memory is a relay's.
package main

import (
	"context"
	"fmt"
	"os"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/bench/mcprelay"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: mcprelay sdk|raw UPSTREAM")
		os.Exit(2)
	}
	ctx := context.Background()
	var err error
	switch os.Args[1] {
	case "sdk":
		err = mcprelay.NewSDK(os.Args[2]).Run(ctx, &sdk.StdioTransport{})
	case "raw":
		err = mcprelay.NewRaw(os.Args[2]).ServeStdio(ctx, os.Stdin, os.Stdout)
	default:
		err = fmt.Errorf("no relay %q (sdk, raw)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcprelay:", err)
		os.Exit(1)
	}
}
