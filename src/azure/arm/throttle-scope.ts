// Whose a 429 is (docs/design/fulfiller.md, "Budgets and workers"). Pure.
//
// - One resource's: Network answers a write to a resource another operation
//   is updating 429 `RetryableError` with the detail
//   `RetryableErrorDueToAnotherOperation` and Retry-After
//   (cloudfoundry/bosh-azure-cpi-release#179, Azure/azure-rest-api-specs#1124:
//   not throttling, "a retryable error"); Compute answers 429 when a
//   resource's own policy is spent, its count 0 in
//   x-ms-ratelimit-remaining-resource while the subscription's is not low.
//   Only that resource's writes should wait.
// - The subscription's (or its provider's): ARM's own 429
//   `SubscriptionRequestsThrottled`, or any 429 whose
//   x-ms-ratelimit-remaining-subscription-reads/-writes is low ("If the
//   remaining call count is approaching 0, the subscription's general call
//   limit defined by Azure Resource Manager has been reached", Azure docs,
//   "Troubleshooting API throttling errors"), and any 429 nothing ties to
//   one resource: every call of the kind slows down.
import type { CallKind } from './budget.ts';
import { remainingOfResource, REMAINING_HEADER, REMAINING_RESOURCE_HEADER } from './budget.ts';

export type ThrottleScope = 'resource' | 'subscription';

interface ArmErrorBody {
  error?: { code?: unknown; details?: Array<{ code?: unknown }> };
}

/** The error code and detail codes of an ARM error body (none when it is not one). */
export function errorCodes(body: string | null | undefined): string[] {
  if (!body) return [];
  try {
    const e = (JSON.parse(body) as ArmErrorBody).error;
    return [e?.code, ...(e?.details ?? []).map((d) => d?.code)].filter(
      (c): c is string => typeof c === 'string',
    );
  } catch {
    return [];
  }
}

export function throttleScope(
  response: { headers: { get(name: string): string | undefined }; bodyAsText?: string | null },
  kind: CallKind,
  lowWater: number,
): ThrottleScope {
  const codes = errorCodes(response.bodyAsText);
  if (codes.includes('SubscriptionRequestsThrottled')) return 'subscription';
  const left = response.headers.get(REMAINING_HEADER[kind]);
  const subscriptionLow = left !== undefined && left.trim() !== '' && Number(left) < lowWater;
  if (subscriptionLow) return 'subscription';
  if (codes.includes('RetryableErrorDueToAnotherOperation') || codes[0] === 'RetryableError') {
    return 'resource';
  }
  const resourceLeft = remainingOfResource(response.headers.get(REMAINING_RESOURCE_HEADER));
  if (resourceLeft !== undefined && resourceLeft <= 0) return 'resource';
  return 'subscription';
}
