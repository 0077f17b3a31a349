import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

/**
 * A request the server refused: its one-line message, the input it names, the HTTP status, and the
 * dotted path of the request field it concerns (`resources.cpus`, `parameters.lr`; null: none).
 */
export class PromoteRequestError extends Error {
  constructor(
    message: string,
    readonly subject: string | null,
    readonly status: number,
    readonly field: string | null = null
  ) {
    super(message);
    this.name = 'PromoteRequestError';
  }
}

/**
 * Call the jupyter-promote REST API (`/jupyter-promote/...`) of the Jupyter server; its JSON answer.
 */
export async function requestAPI<T>(
  endPoint = '',
  init: RequestInit = {},
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): Promise<T> {
  const text = await (await fetchAPI(endPoint, init, settings)).text();
  try {
    return (text.length > 0 ? JSON.parse(text) : null) as T;
  } catch {
    return null as T;
  }
}

/**
 * Fetch bytes from the jupyter-promote REST API (a job's artifact), authenticated as every other call is.
 */
export async function requestBlob(
  endPoint: string,
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): Promise<Blob> {
  return (await fetchAPI(endPoint, {}, settings)).blob();
}

/** The server's answer when it is a success; a refusal becomes a PromoteRequestError. */
async function fetchAPI(endPoint: string, init: RequestInit, settings: ServerConnection.ISettings): Promise<Response> {
  const url = URLExt.join(settings.baseUrl, 'jupyter-promote', endPoint);
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    throw new ServerConnection.NetworkError(error as TypeError);
  }
  if (response.ok) {
    return response;
  }
  const text = await response.text();
  let data: any;
  try {
    data = text.length > 0 ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  throw new PromoteRequestError(
    data?.message ?? (text || response.statusText),
    data?.subject ?? null,
    response.status,
    typeof data?.field === 'string' ? data.field : null
  );
}
