package main

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/blindexec/blindexec/internal/settings"
)

func initCmd(cfg *config) *cobra.Command {
	return &cobra.Command{
		// The env file that BLINDEXEC_ENV_FILE names may not exist yet:
		// init is what creates it. Any other bad setting still stops it.
		PersistentPreRunE: func(*cobra.Command, []string) error {
			var errs []error
			for _, e := range cfg.settings.Errs() {
				if se, ok := e.(*settings.Error); !ok || se.Name != settings.EnvFileVar {
					errs = append(errs, e)
				}
			}
			return settingsError(errs)
		},
		Use:   "init",
		Short: "Create " + settings.DefaultEnvFile + " (mode 0600) with a new master key, admin token and service token, read by every later command",
		Long: `init writes a new credential master key (BLINDEXEC_MASTER_KEY), admin token
(BLINDEXEC_ADMIN_TOKEN) and service token (BLINDEXEC_SERVICE_TOKEN, the one the
RuoYi backend calls with) to the env file: ` + settings.EnvFileVar + ` if set, else
./` + settings.DefaultEnvFile + `. Every blindexec command reads that file; a variable set in
the environment wins over it. init never overwrites an existing file: it may hold
the only copy of the key that decrypts the stored credentials.`,
		Args: argsExactly(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, _ := settings.EnvFilePath(os.LookupEnv)
			if cfg.settings.Origin(setMasterKey.Name) == "the environment" {
				return fmt.Errorf("init: BLINDEXEC_MASTER_KEY is set in the environment, which wins over %s: unset it first, or keep using it without init", path)
			}
			key := make([]byte, 32)
			rand.Read(key)
			err := settings.WriteEnvFile(path, "blindexec settings, written by `blindexec init`.\n"+
				"BLINDEXEC_MASTER_KEY decrypts the stored credentials: back it up; losing it loses them.\n"+
				"Variables set in the environment win over this file.",
				[][2]string{
					{"BLINDEXEC_MASTER_KEY", base64.StdEncoding.EncodeToString(key)},
					{"BLINDEXEC_ADMIN_TOKEN", newToken()},
					{"BLINDEXEC_SERVICE_TOKEN", newToken()},
				})
			if errors.Is(err, settings.ErrEnvFileExists) {
				return fmt.Errorf("init: %s exists and may hold the only copy of the master key; init never overwrites it", path)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (mode 0600): BLINDEXEC_MASTER_KEY, BLINDEXEC_ADMIN_TOKEN, BLINDEXEC_SERVICE_TOKEN (RuoYi's)\nnext: blindexec serve (it migrates the database first)\n", path)
			return nil
		},
	}
}

// newToken is a bearer token of 192 random bits, URL-safe so that it
// pastes into a shell, a header or RuoYi's configuration as it is.
func newToken() string {
	b := make([]byte, 24)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
