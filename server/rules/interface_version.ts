/**
 * Rule 5: `x-interface-version` is required (400 `missingHeader`) and must be the supported
 * version (422 `unsupportedInterfaceVersion` with `supportedVersions`).
 *
 * @module
 */
import { type GuardStep, guardStep } from "../chain.ts";
import type { RequestContext } from "../context.ts";
import { InterfaceError } from "../errors.ts";

/** The interface version this runtime speaks. */
export const INTERFACE_VERSION = "2026-07-23";

/** Every version this runtime accepts. */
export const SUPPORTED_INTERFACE_VERSIONS: readonly string[] = Object.freeze([INTERFACE_VERSION]);

/**
 * The interface-version step.
 *
 * @example
 * ```ts
 * import { interfaceVersionStep } from "./interface_version.ts";
 * const step = interfaceVersionStep();
 * ```
 */
export function interfaceVersionStep(): GuardStep<RequestContext> {
  return guardStep(function interfaceVersion(context: RequestContext): void {
    const value = context.interfaceVersion;
    if (value === INTERFACE_VERSION) return;
    if (value === null) {
      throw new InterfaceError("missingHeader", "Header x-interface-version is required", {
        extra: { header: "x-interface-version" },
      });
    }
    throw new InterfaceError(
      "unsupportedInterfaceVersion",
      "This interface version is not supported",
      { extra: { header: "x-interface-version", supportedVersions: SUPPORTED_INTERFACE_VERSIONS } },
    );
  });
}
