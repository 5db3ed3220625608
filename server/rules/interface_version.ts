/**
 * Rule 5: `x-interface-version` is required (400 `missingHeader`) and must be the supported
 * version (422 `unsupportedInterfaceVersion` with `supportedVersions`).
 *
 * @module
 */
import { checkRule, type Rule } from "../chain.ts";
import type { RequestContext } from "../context.ts";
import { InterfaceError } from "../errors.ts";
import { INTERFACE_VERSION } from "../../wire/mod.ts";

/** Every version this runtime accepts. */
export const SUPPORTED_INTERFACE_VERSIONS: readonly string[] = Object.freeze([INTERFACE_VERSION]);

/** The interface-version rule. */
export function interfaceVersionRule(): Rule<RequestContext> {
  return checkRule(function interfaceVersion(context: RequestContext): void {
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
