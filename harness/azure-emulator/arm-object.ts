// The emulator's view of an ARM resource body: a NIC, an ipConfiguration or a
// scale-set VM as ARM serialises them (JSON with a `properties` bag).

/** A NIC or ipConfiguration as ARM serialises it. */
export type ArmObject = Record<string, unknown> & { properties?: Record<string, unknown> };
