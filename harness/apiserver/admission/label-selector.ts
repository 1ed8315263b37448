// metav1.LabelSelector matching (matchLabels and matchExpressions), for
// admission's objectSelector and namespaceSelector. An empty selector matches
// everything.

export interface LabelSelectorSpec {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

export function matchesLabelSelector(
  sel: LabelSelectorSpec | undefined,
  labels: Record<string, string>,
): boolean {
  if (!sel) return true;
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const present = Object.hasOwn(labels, e.key);
    const values = e.values ?? [];
    switch (e.operator) {
      case 'In':
        if (!present || !values.includes(labels[e.key] as string)) return false;
        break;
      case 'NotIn':
        if (present && values.includes(labels[e.key] as string)) return false;
        break;
      case 'Exists':
        if (!present) return false;
        break;
      case 'DoesNotExist':
        if (present) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}
