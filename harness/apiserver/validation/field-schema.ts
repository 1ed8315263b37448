// The known fields of the built-in kinds this server serves, as their Go
// types in k8s.io/api (v1.33) declare them: what kube-apiserver's decoder
// knows, so that what it does not know is an unknown field (dropped, warned
// about or refused by fieldValidation, fields.ts). Compact: a field is a
// struct (its known fields), a list or a map of something, or a leaf; a
// subtree this file does not spell out (affinity, volume sources, container
// statuses, CRD schemas) is `ANY`, which accepts everything under it, so a
// gap here can only let an unknown field through, never refuse a known one.
import type { ResourceInfo } from '../resources.ts';

/** A struct: its known fields. */
export interface StructType {
  fields: Record<string, FieldType>;
}
export type FieldType = 'leaf' | 'any' | StructType | { list: FieldType } | { map: FieldType };

const LEAF = 'leaf' as const;
export const ANY = 'any' as const;
const struct = (fields: Record<string, FieldType>): StructType => ({ fields });
const list = (of: FieldType): FieldType => ({ list: of });
const map = (of: FieldType): FieldType => ({ map: of });
const leaves = (...names: string[]): Record<string, FieldType> =>
  Object.fromEntries(names.map((n) => [n, LEAF]));
const anys = (...names: string[]): Record<string, FieldType> =>
  Object.fromEntries(names.map((n) => [n, ANY]));

// k8s.io/apimachinery/pkg/apis/meta/v1/types.go: ObjectMeta, OwnerReference,
// ManagedFieldsEntry, LabelSelector.
const OBJECT_META = struct({
  ...leaves(
    'name',
    'generateName',
    'namespace',
    'selfLink',
    'uid',
    'resourceVersion',
    'generation',
    'creationTimestamp',
    'deletionTimestamp',
    'deletionGracePeriodSeconds',
  ),
  labels: map(LEAF),
  annotations: map(LEAF),
  ownerReferences: list(
    struct(leaves('apiVersion', 'kind', 'name', 'uid', 'controller', 'blockOwnerDeletion')),
  ),
  finalizers: list(LEAF),
  managedFields: list(
    struct({
      ...leaves('manager', 'operation', 'apiVersion', 'time', 'fieldsType', 'subresource'),
      fieldsV1: ANY,
    }),
  ),
});

const LABEL_SELECTOR = struct({
  matchLabels: map(LEAF),
  matchExpressions: list(struct({ ...leaves('key', 'operator'), values: list(LEAF) })),
});

// k8s.io/api/core/v1/types.go: Probe, ProbeHandler, SecurityContext,
// PodSecurityContext, Container, EphemeralContainer, Volume, Toleration,
// PodSpec, PodTemplateSpec, PodStatus.
const PORT_HOST = leaves('port', 'host');
const PROBE = struct({
  exec: struct({ command: list(LEAF) }),
  httpGet: struct({
    ...leaves('path', 'port', 'host', 'scheme'),
    httpHeaders: list(struct(leaves('name', 'value'))),
  }),
  tcpSocket: struct(PORT_HOST),
  grpc: struct(leaves('port', 'service')),
  ...leaves(
    'initialDelaySeconds',
    'timeoutSeconds',
    'periodSeconds',
    'successThreshold',
    'failureThreshold',
    'terminationGracePeriodSeconds',
  ),
});
const PROFILE = struct(leaves('type', 'localhostProfile'));
const SECURITY_CONTEXT = struct({
  capabilities: struct({ add: list(LEAF), drop: list(LEAF) }),
  ...anys('seLinuxOptions', 'windowsOptions'),
  ...leaves(
    'privileged',
    'runAsUser',
    'runAsGroup',
    'runAsNonRoot',
    'readOnlyRootFilesystem',
    'allowPrivilegeEscalation',
    'procMount',
  ),
  seccompProfile: PROFILE,
  appArmorProfile: PROFILE,
});
const POD_SECURITY_CONTEXT = struct({
  ...anys('seLinuxOptions', 'windowsOptions'),
  ...leaves(
    'runAsUser',
    'runAsGroup',
    'runAsNonRoot',
    'supplementalGroupsPolicy',
    'fsGroup',
    'fsGroupChangePolicy',
    'seLinuxChangePolicy',
  ),
  supplementalGroups: list(LEAF),
  sysctls: list(struct(leaves('name', 'value'))),
  seccompProfile: PROFILE,
  appArmorProfile: PROFILE,
});
const CONTAINER_FIELDS: Record<string, FieldType> = {
  ...leaves(
    'name',
    'image',
    'workingDir',
    'restartPolicy',
    'terminationMessagePath',
    'terminationMessagePolicy',
    'imagePullPolicy',
    'stdin',
    'stdinOnce',
    'tty',
  ),
  command: list(LEAF),
  args: list(LEAF),
  ports: list(struct(leaves('name', 'hostPort', 'containerPort', 'protocol', 'hostIP'))),
  envFrom: list(ANY),
  env: list(struct({ ...leaves('name', 'value'), valueFrom: ANY })),
  resources: struct({ limits: map(LEAF), requests: map(LEAF), claims: ANY }),
  resizePolicy: list(struct(leaves('resourceName', 'restartPolicy'))),
  restartPolicyRules: ANY,
  volumeMounts: list(
    struct(
      leaves(
        'name',
        'readOnly',
        'recursiveReadOnly',
        'mountPath',
        'subPath',
        'mountPropagation',
        'subPathExpr',
      ),
    ),
  ),
  volumeDevices: list(struct(leaves('name', 'devicePath'))),
  livenessProbe: PROBE,
  readinessProbe: PROBE,
  startupProbe: PROBE,
  lifecycle: ANY,
  securityContext: SECURITY_CONTEXT,
};
const CONTAINER = struct(CONTAINER_FIELDS);
const VOLUME = struct({
  name: LEAF,
  hostPath: struct(leaves('path', 'type')),
  emptyDir: struct(leaves('medium', 'sizeLimit')),
  ...anys(
    'gcePersistentDisk',
    'awsElasticBlockStore',
    'gitRepo',
    'secret',
    'nfs',
    'iscsi',
    'glusterfs',
    'persistentVolumeClaim',
    'rbd',
    'flexVolume',
    'cinder',
    'cephfs',
    'flocker',
    'downwardAPI',
    'fc',
    'azureFile',
    'configMap',
    'vsphereVolume',
    'quobyte',
    'azureDisk',
    'photonPersistentDisk',
    'projected',
    'portworxVolume',
    'scaleIO',
    'storageos',
    'csi',
    'ephemeral',
    'image',
  ),
});
const TOLERATION = struct(leaves('key', 'operator', 'value', 'effect', 'tolerationSeconds'));
const POD_SPEC = struct({
  volumes: list(VOLUME),
  initContainers: list(CONTAINER),
  containers: list(CONTAINER),
  ephemeralContainers: list(struct({ ...CONTAINER_FIELDS, targetContainerName: LEAF })),
  ...leaves(
    'restartPolicy',
    'terminationGracePeriodSeconds',
    'activeDeadlineSeconds',
    'dnsPolicy',
    'serviceAccountName',
    'serviceAccount',
    'automountServiceAccountToken',
    'nodeName',
    'hostNetwork',
    'hostPID',
    'hostIPC',
    'shareProcessNamespace',
    'hostname',
    'hostnameOverride',
    'subdomain',
    'schedulerName',
    'priorityClassName',
    'priority',
    'runtimeClassName',
    'enableServiceLinks',
    'preemptionPolicy',
    'setHostnameAsFQDN',
    'hostUsers',
  ),
  nodeSelector: map(LEAF),
  securityContext: POD_SECURITY_CONTEXT,
  imagePullSecrets: list(struct(leaves('name'))),
  affinity: ANY,
  tolerations: list(TOLERATION),
  hostAliases: list(struct({ ip: LEAF, hostnames: list(LEAF) })),
  dnsConfig: ANY,
  readinessGates: list(struct(leaves('conditionType'))),
  overhead: map(LEAF),
  topologySpreadConstraints: ANY,
  os: struct(leaves('name')),
  schedulingGates: list(struct(leaves('name'))),
  resourceClaims: ANY,
  resources: ANY,
});
const POD_TEMPLATE_SPEC = struct({ metadata: OBJECT_META, spec: POD_SPEC });
const POD_IP = list(struct(leaves('ip')));
const POD_STATUS = struct({
  ...leaves(
    'observedGeneration',
    'phase',
    'message',
    'reason',
    'nominatedNodeName',
    'hostIP',
    'podIP',
    'startTime',
    'qosClass',
    'resize',
  ),
  conditions: list(
    struct(
      leaves(
        'type',
        'observedGeneration',
        'status',
        'lastProbeTime',
        'lastTransitionTime',
        'reason',
        'message',
      ),
    ),
  ),
  hostIPs: POD_IP,
  podIPs: POD_IP,
  ...anys(
    'initContainerStatuses',
    'containerStatuses',
    'ephemeralContainerStatuses',
    'resourceClaimStatuses',
    'extendedResourceClaimStatus',
  ),
});

// k8s.io/api/core/v1/types.go: Node, NodeSpec, NodeStatus, Taint.
const NODE = {
  spec: struct({
    ...leaves('podCIDR', 'providerID', 'unschedulable', 'externalID'),
    podCIDRs: list(LEAF),
    taints: list(struct(leaves('key', 'value', 'effect', 'timeAdded'))),
    configSource: ANY,
  }),
  status: struct({
    capacity: map(LEAF),
    allocatable: map(LEAF),
    phase: LEAF,
    conditions: list(
      struct(
        leaves('type', 'status', 'lastHeartbeatTime', 'lastTransitionTime', 'reason', 'message'),
      ),
    ),
    addresses: list(struct(leaves('type', 'address'))),
    ...anys(
      'daemonEndpoints',
      'nodeInfo',
      'images',
      'volumesAttached',
      'config',
      'runtimeHandlers',
      'features',
      'declaredFeatures',
    ),
    volumesInUse: list(LEAF),
  }),
};

// k8s.io/api/core/v1/types.go: ObjectReference, Event, EventSource, EventSeries.
const OBJECT_REFERENCE = struct(
  leaves('kind', 'namespace', 'name', 'uid', 'apiVersion', 'resourceVersion', 'fieldPath'),
);
const EVENT = {
  involvedObject: OBJECT_REFERENCE,
  related: OBJECT_REFERENCE,
  source: struct(leaves('component', 'host')),
  series: struct(leaves('count', 'lastObservedTime')),
  ...leaves(
    'reason',
    'message',
    'firstTimestamp',
    'lastTimestamp',
    'count',
    'type',
    'eventTime',
    'action',
    'reportingComponent',
    'reportingInstance',
  ),
};

// k8s.io/api/rbac/v1/types.go: PolicyRule, Subject, RoleRef, AggregationRule.
const RULES = list(
  struct({
    verbs: list(LEAF),
    apiGroups: list(LEAF),
    resources: list(LEAF),
    resourceNames: list(LEAF),
    nonResourceURLs: list(LEAF),
  }),
);
const BINDING = {
  subjects: list(struct(leaves('kind', 'apiGroup', 'name', 'namespace'))),
  roleRef: struct(leaves('apiGroup', 'kind', 'name')),
};

// k8s.io/api/apps/v1/types.go: DaemonSetSpec, DeploymentSpec and their strategies.
const ROLLING = struct(leaves('maxUnavailable', 'maxSurge'));
const DAEMON_SET_SPEC = struct({
  selector: LABEL_SELECTOR,
  template: POD_TEMPLATE_SPEC,
  updateStrategy: struct({ type: LEAF, rollingUpdate: ROLLING }),
  ...leaves('minReadySeconds', 'revisionHistoryLimit'),
});
const DEPLOYMENT_SPEC = struct({
  selector: LABEL_SELECTOR,
  template: POD_TEMPLATE_SPEC,
  strategy: struct({ type: LEAF, rollingUpdate: ROLLING }),
  ...leaves(
    'replicas',
    'minReadySeconds',
    'revisionHistoryLimit',
    'paused',
    'progressDeadlineSeconds',
  ),
});

// k8s.io/api/admissionregistration/v1/types.go: ValidatingAdmissionPolicySpec,
// MatchResources, NamedRuleWithOperations, Validation, AuditAnnotation,
// MatchCondition, Variable, ValidatingAdmissionPolicyBindingSpec, ParamRef.
const NAMED_RULE = struct({
  resourceNames: list(LEAF),
  operations: list(LEAF),
  apiGroups: list(LEAF),
  apiVersions: list(LEAF),
  resources: list(LEAF),
  scope: LEAF,
});
const MATCH_RESOURCES = struct({
  namespaceSelector: LABEL_SELECTOR,
  objectSelector: LABEL_SELECTOR,
  resourceRules: list(NAMED_RULE),
  excludeResourceRules: list(NAMED_RULE),
  matchPolicy: LEAF,
});
const NAMED_EXPRESSION = struct(leaves('name', 'expression'));
const VAP_SPEC = struct({
  paramKind: struct(leaves('apiVersion', 'kind')),
  matchConstraints: MATCH_RESOURCES,
  validations: list(struct(leaves('expression', 'message', 'reason', 'messageExpression'))),
  failurePolicy: LEAF,
  auditAnnotations: list(struct(leaves('key', 'valueExpression'))),
  matchConditions: list(NAMED_EXPRESSION),
  variables: list(NAMED_EXPRESSION),
});
const VAPB_SPEC = struct({
  policyName: LEAF,
  paramRef: struct({
    ...leaves('name', 'namespace', 'parameterNotFoundAction'),
    selector: LABEL_SELECTOR,
  }),
  matchResources: MATCH_RESOURCES,
  validationActions: list(LEAF),
});

// k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1/types.go:
// CustomResourceDefinitionSpec (the schema itself is left open).
const CRD_SPEC = struct({
  group: LEAF,
  names: struct({
    ...leaves('plural', 'singular', 'kind', 'listKind'),
    shortNames: list(LEAF),
    categories: list(LEAF),
  }),
  scope: LEAF,
  versions: list(
    struct({
      ...leaves('name', 'served', 'storage', 'deprecated', 'deprecationWarning'),
      ...anys('schema', 'subresources', 'additionalPrinterColumns', 'selectableFields'),
    }),
  ),
  conversion: ANY,
  preserveUnknownFields: LEAF,
});

const TOP = leaves('apiVersion', 'kind');
const kind = (fields: Record<string, FieldType>): StructType =>
  struct({ ...TOP, metadata: OBJECT_META, ...fields });

/** Keyed by resourceKey: group/plural ('' group: plural). */
const KINDS: Record<string, StructType> = {
  namespaces: kind({ spec: struct({ finalizers: list(LEAF) }), status: ANY }),
  nodes: kind(NODE),
  pods: kind({ spec: POD_SPEC, status: POD_STATUS }),
  events: kind(EVENT),
  serviceaccounts: kind({
    secrets: list(OBJECT_REFERENCE),
    imagePullSecrets: list(struct(leaves('name'))),
    automountServiceAccountToken: LEAF,
  }),
  'apps/daemonsets': kind({ spec: DAEMON_SET_SPEC, status: ANY }),
  'apps/deployments': kind({ spec: DEPLOYMENT_SPEC, status: ANY }),
  'rbac.authorization.k8s.io/clusterroles': kind({
    rules: RULES,
    aggregationRule: struct({ clusterRoleSelectors: list(LABEL_SELECTOR) }),
  }),
  'rbac.authorization.k8s.io/roles': kind({ rules: RULES }),
  'rbac.authorization.k8s.io/clusterrolebindings': kind(BINDING),
  'rbac.authorization.k8s.io/rolebindings': kind(BINDING),
  'admissionregistration.k8s.io/validatingadmissionpolicies': kind({
    spec: VAP_SPEC,
    status: ANY,
  }),
  'admissionregistration.k8s.io/validatingadmissionpolicybindings': kind({ spec: VAPB_SPEC }),
  'coordination.k8s.io/leases': kind({
    spec: struct(
      leaves(
        'holderIdentity',
        'leaseDurationSeconds',
        'acquireTime',
        'renewTime',
        'leaseTransitions',
        'strategy',
        'preferredHolder',
      ),
    ),
  }),
  'apiextensions.k8s.io/customresourcedefinitions': kind({ spec: CRD_SPEC, status: ANY }),
  'authentication.k8s.io/selfsubjectreviews': kind({ status: ANY }),
};

/** The known fields of a built-in kind, or undefined (a custom resource, or a kind not listed). */
export function builtinSchema(res: ResourceInfo): StructType | undefined {
  if (res.crdName !== undefined) return undefined;
  return KINDS[res.group ? `${res.group}/${res.plural}` : res.plural];
}
