/** Where the dashboard shows one task or one delivery. */
export const taskHref = (id: string) => `/ui/tasks/${encodeURIComponent(id)}`;
export const deliveryHref = (id: string) => `/ui/deliveries/${encodeURIComponent(id)}`;
