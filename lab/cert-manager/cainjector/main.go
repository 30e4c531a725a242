// The lab's cert-manager cainjector: cert-manager's own injectors (its Go module's pkg/controller/cainjector, at
// the version go.mod pins) that copy a Certificate's CA into the caBundle of the webhook configurations and CRDs
// annotated cert-manager.io/inject-ca-from (or -from-secret). The release's main package (cmd/cainjector) is a
// module the Go module proxy does not serve, so this small main runs the same public setup in a
// controller-runtime manager. One replica, no leader election; Secrets are read uncached, as the release does.
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"

	cmscheme "github.com/cert-manager/cert-manager/pkg/api"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
	"github.com/cert-manager/cert-manager/pkg/util"
	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager-cainjector:", err)
		os.Exit(1)
	}
}

func run() error {
	healthz := flag.String("healthz-address", ":9404", "address of /livez and /readyz")
	flag.Parse()
	ctrl.SetLogger(zap.New())

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(apiextv1.AddToScheme(scheme))
	utilruntime.Must(cmscheme.AddToScheme(scheme))

	config, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	// the injectors' server-side apply names its field manager after the user agent, as the release's does
	config = util.RestConfigWithUserAgent(config, "cainjector")
	mgr, err := ctrl.NewManager(config, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: *healthz,
		LivenessEndpointName:   "/livez",
		ReadinessEndpointName:  "/readyz",
		Client:                 client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
	})
	if err != nil {
		return err
	}
	ctx := ctrl.SetupSignalHandler()
	if err := cainjector.RegisterAllInjectors(ctx, mgr, cainjector.SetupOptions{
		EnableCertificatesDataSource: true,
		EnabledReconcilersFor: map[string]bool{
			"mutatingwebhookconfiguration": true, "validatingwebhookconfiguration": true, "customresourcedefinition": true,
		},
	}); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", func(_ *http.Request) error { return nil }); err != nil {
		return err
	}
	return mgr.Start(ctx)
}
