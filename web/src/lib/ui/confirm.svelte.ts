// confirm asks the user to confirm a destructive action in a modal dialog
// (ConfirmHost shows it) and resolves with the answer.

export const pendingConfirm = $state({
  open: false,
  title: '',
  body: '',
  action: '',
  resolve: null as ((ok: boolean) => void) | null,
});

export function confirm(title: string, body: string, action: string): Promise<boolean> {
  pendingConfirm.resolve?.(false);
  return new Promise((resolve) => {
    Object.assign(pendingConfirm, { open: true, title, body, action, resolve });
  });
}

export function answerConfirm(ok: boolean): void {
  const r = pendingConfirm.resolve;
  Object.assign(pendingConfirm, { open: false, resolve: null });
  r?.(ok);
}
