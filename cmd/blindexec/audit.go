package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/blindexec/blindexec/store"
)

// recordChange writes a change made at the command line into the
// administrators' log, as the API's and the console's are (issue 51
// point 4): who ("cli"), what in words (d) and when. A failure is a
// warning: the change itself was made.
func recordChange(ctx context.Context, cmd *cobra.Command, st *store.Store, kind string, d store.AdminDetail) {
	e := &store.AdminEvent{Actor: "cli", Via: "cli", Action: "CLI", Kind: kind,
		Target: strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" "), HTTPStatus: 0}
	e.SetDetail(d)
	if err := st.InsertAdminEvent(context.WithoutCancel(ctx), e); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: the change is not in the administrators' log: %v\n", err)
	}
}
