package main

import (
	"flag"
	"fmt"
	"io"

	"clopen.dev/pkg/platform/busauth"
	"clopen.dev/pkg/platform/bustoken"
)

// natsSecret is the Kubernetes secret deploy/k8s holds the bus passwords in.
const natsSecret = "clopen-nats"

// runNATSConfig is `clopen admin nats-config`: the bus's grants as the
// nats-server configuration that deploy/nats/auth.conf ships, or, with
// --helm, as the NATS chart's values (deploy/k8s/nats-auth-values.yaml).
func runNATSConfig(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("clopen admin nats-config", flag.ContinueOnError)
	fs.SetOutput(stderr)
	helm := fs.Bool("helm", false, "print values for the official NATS Helm chart instead")
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: clopen admin nats-config [--helm]\n\n"+
			"prints the NATS authorization that gives every Clopen service its own identity and subjects;\n"+
			"the server reads each password from $"+busauth.PasswordVar(busauth.Gateway)+" and the like\n"+
			"(clopen admin nats-passwords makes them)\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("admin nats-config: unexpected argument %q", fs.Arg(0))
	}
	if *helm {
		fmt.Fprint(stdout, busauth.HelmValues(natsSecret))
		return nil
	}
	fmt.Fprint(stdout, busauth.ServerConfig())
	return nil
}

// runNATSPasswords is `clopen admin nats-passwords`: a fresh random
// password for every bus identity, as an env file.
func runNATSPasswords(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("clopen admin nats-passwords", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: clopen admin nats-passwords\n\n"+
			"prints a new random password for each bus identity as NAME=value lines:\n"+
			"  clopen admin nats-passwords >> .env                      (docker compose)\n"+
			"  clopen admin nats-passwords > nats.env && kubectl -n clopen create secret generic "+natsSecret+" --from-env-file=nats.env\n")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("admin nats-passwords: unexpected argument %q", fs.Arg(0))
	}
	fmt.Fprint(stdout, busauth.NewPasswords().EnvFile())
	return nil
}

// busKeysSecret is the Kubernetes secret deploy/k8s holds the bus token
// keys in.
const busKeysSecret = "clopen-bus-keys"

// runBusKeys is `clopen admin bus-keys`: fresh ed25519 key pairs of the
// caller and dispatch tokens (pkg/platform/bustoken), as an env file.
func runBusKeys(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("clopen admin bus-keys", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: clopen admin bus-keys\n\n"+
			"prints new key pairs of the tokens that say whom a bus request acts for, as NAME=value lines\n"+
			"(standard base64 of the raw ed25519 seed or public key):\n"+
			"  "+bustoken.EnvCallerKey+"      the gateway signs caller tokens\n"+
			"  "+bustoken.EnvCallerPubKey+"   streammgr, artifacts and the workers verify them\n"+
			"  "+bustoken.EnvDispatchKey+"    streammgr signs dispatch tokens into its jobs\n"+
			"  "+bustoken.EnvDispatchPubKey+" artifacts verifies them\n\n"+
			"  clopen admin bus-keys >> .env                      (docker compose)\n"+
			"  clopen admin bus-keys > bus-keys.env && kubectl -n clopen create secret generic "+busKeysSecret+" --from-env-file=bus-keys.env\n")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("admin bus-keys: unexpected argument %q", fs.Arg(0))
	}
	fmt.Fprint(stdout, bustoken.Generate().Env())
	return nil
}
