import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

/** A request the server refused: its one-line message, the input it names, and the HTTP status. */
export class PromoteRequestError extends Error {
  constructor(
    message: string,
    readonly subject: string | null,
    readonly status: number
  ) {
    super(message);
    this.name = 'PromoteRequestError';
  }
}

/**
 * Call the jupyter-promote REST API (`/jupyter-promote/...`) of the Jupyter server.
 */
export async function requestAPI<T>(
  endPoint = '',
  init: RequestInit = {},
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): Promise<T> {
  const url = URLExt.join(settings.baseUrl, 'jupyter-promote', endPoint);
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    throw new ServerConnection.NetworkError(error as TypeError);
  }
  const text = await response.text();
  let data: any = null;
  try {
    data = text.length > 0 ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    throw new PromoteRequestError(
      data?.message ?? (text || response.statusText),
      data?.subject ?? null,
      response.status
    );
  }
  return data as T;
}
