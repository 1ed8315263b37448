// Whatever was thrown, as one line of text for a log field, an Event or an
// error answer: an Error's message, else the value as a string (and a fixed
// text for a value that cannot even be turned into one, such as an object
// whose toString throws). The one such helper of the product; the harness
// uses it too.

export function errorText(err: unknown): string {
  if (err instanceof Error) return err.message;
  try {
    return String(err);
  } catch {
    return 'unknown error';
  }
}
