// Schema check of deploy/kubernetes/ without a cluster: `kubectl apply --dry-run=client`
// fetches the schema from an API server, so where there is none every document is decoded
// strictly (unknown fields and wrong types are errors) into the official k8s.io/api types.
//
//	cd deploy/kubernetes/check && go run . ../*.yaml
package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	netv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"
)

// The kinds deploy/kubernetes/ uses; another one is an error, so a new manifest gets a type.
func typed(apiVersion, kind string) interface{} {
	switch apiVersion + "/" + kind {
	case "v1/Service":
		return &corev1.Service{}
	case "v1/ConfigMap":
		return &corev1.ConfigMap{}
	case "v1/PersistentVolumeClaim":
		return &corev1.PersistentVolumeClaim{}
	case "apps/v1/Deployment":
		return &appsv1.Deployment{}
	case "batch/v1/Job":
		return &batchv1.Job{}
	case "networking.k8s.io/v1/NetworkPolicy":
		return &netv1.NetworkPolicy{}
	}
	return nil
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: go run . FILE.yaml...")
		os.Exit(2)
	}
	bad := 0
	for _, path := range os.Args[1:] {
		data, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		for i, doc := range bytes.Split(data, []byte("\n---\n")) {
			if strings.TrimSpace(string(doc)) == "" {
				continue
			}
			var meta struct {
				Kind       string `json:"kind"`
				APIVersion string `json:"apiVersion"`
			}
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				fmt.Printf("%s[%d]: %v\n", path, i, err)
				bad++
				continue
			}
			obj := typed(meta.APIVersion, meta.Kind)
			if obj == nil {
				fmt.Printf("%s[%d]: no type for %s %s\n", path, i, meta.APIVersion, meta.Kind)
				bad++
				continue
			}
			if err := yaml.UnmarshalStrict(doc, obj); err != nil {
				fmt.Printf("%s[%d] %s: %v\n", path, i, meta.Kind, err)
				bad++
				continue
			}
			fmt.Printf("%s[%d] %s: ok\n", path, i, meta.Kind)
		}
	}
	if bad > 0 {
		os.Exit(1)
	}
}
