// The lab's cert-manager controller: cert-manager's own control loops (its Go module's pkg/controller, at the
// version go.mod pins) for the issuers the chart uses -- SelfSigned and CA Issuers, Certificates and their
// CertificateRequests, and the approver that approves requests for cert-manager.io issuers. The release's own
// main package (cmd/controller) is a module the Go module proxy does not serve, so this small main wires the
// same public packages: a ContextFactory, the named controllers' registered constructors, the shared informers.
// One replica, no leader election (the lab runs one); logs to stderr; /livez on --healthz-address.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	controllerpkg "github.com/cert-manager/cert-manager/pkg/controller"
	"github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	crca "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	crselfsigned "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	"github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	"github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
)

// The control loops run, by the names their packages register.
var controllers = []string{
	issuers.ControllerName, clusterissuers.ControllerName,
	trigger.ControllerName, keymanager.ControllerName, requestmanager.ControllerName, issuing.ControllerName,
	readiness.ControllerName, revisionmanager.ControllerName,
	approver.ControllerName, crselfsigned.CRControllerName, crca.CRControllerName,
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager-controller:", err)
		os.Exit(1)
	}
}

func run() error {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file (empty: the pod's ServiceAccount)")
	clusterNS := flag.String("cluster-resource-namespace", "cert-manager", "namespace of ClusterIssuers' Secrets")
	healthz := flag.String("healthz-address", ":9403", "address of /livez")
	workers := flag.Int("concurrent-workers", 5, "workers per control loop")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	logf.InitLogs()
	ctx = logf.NewContext(ctx, logf.Log, "cert-manager-controller")

	factory, err := controllerpkg.NewContextFactory(ctx, controllerpkg.ContextOptions{
		Kubeconfig:         *kubeconfig,
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		IssuerOptions:      controllerpkg.IssuerOptions{ClusterResourceNamespace: *clusterNS},
		CertificateOptions: controllerpkg.CertificateOptions{
			CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
		},
		SchedulerOptions: controllerpkg.SchedulerOptions{MaxConcurrentChallenges: 60},
	})
	if err != nil {
		return err
	}
	loops := make(map[string]controllerpkg.Interface, len(controllers))
	for _, name := range controllers {
		constructor, ok := controllerpkg.Known()[name]
		if !ok {
			return fmt.Errorf("no control loop named %q is registered", name)
		}
		if loops[name], err = constructor(factory); err != nil {
			return fmt.Errorf("control loop %s: %w", name, err)
		}
	}
	// the constructors asked for their informers: start them now (each loop waits for its caches)
	shared, err := factory.Build()
	if err != nil {
		return err
	}
	shared.KubeSharedInformerFactory.Start(ctx.Done())
	shared.SharedInformerFactory.Start(ctx.Done())
	shared.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())

	server := &http.Server{Addr: *healthz, ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })}
	go func() {
		if err := server.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "cert-manager-controller: healthz:", err)
			stop()
		}
	}()

	var wg sync.WaitGroup
	failed := make(chan error, len(loops))
	for name, loop := range loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := loop.Run(*workers, ctx); err != nil {
				failed <- fmt.Errorf("control loop %s: %w", name, err)
				stop()
			}
		}()
	}
	wg.Wait()
	_ = server.Shutdown(context.Background())
	close(failed)
	return <-failed
}
