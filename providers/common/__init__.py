"""What both providers share: the CRDs (:mod:`.crds`), the kinds (:mod:`.resources`), metav1 conditions
(:mod:`.conditions`), pure helpers on objects (:mod:`.objects`), the typed layer over the Kubernetes
client (:mod:`.kube`), the service identity (:mod:`.identity`) and running a provider (:mod:`.operator`)."""
