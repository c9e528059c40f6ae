"""it_helpdesk: an IT service-desk agent handling employees' tickets.

Password resets, access requests, software installs and broken laptops. The agent looks
the employee up, checks the request against the access policy and acts: resets, grants,
installs, opens a hardware ticket or escalates to security. The grader is a model asked
for a verdict: "Verdict: FAIL" and a numbered list of reasons, one per problem, each
reason worded freely. Score parts: resolution, security, communication.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from heldout import Cause, Fault, Kind, SimAdapter, Spec, ref  # noqa: E402

READ = frozenset({"lookup_employee", "get_access_policy", "check_license_pool",
                  "get_device"})

KINDS = (
    Kind("password", "Hi, I'm locked out of my account ({user}). Can you reset my password?",
         ("lookup_employee", "verify_identity", "reset_password", "add_ticket_comment"),
         "Your password has been reset. A temporary password was sent to your phone; you'll "
         "be asked to change it at first login.", 3),
    Kind("access", "Please give me access to the {system} folder, my manager {manager} "
         "approved it.", ("lookup_employee", "get_access_policy", "request_manager_approval",
                          "grant_access", "add_ticket_comment"),
         "Access to {system} has been granted. It can take up to 15 minutes to show up.", 3),
    Kind("software", "Could you install {app} on my laptop {asset}?",
         ("lookup_employee", "check_license_pool", "assign_license", "push_install",
          "add_ticket_comment"),
         "{app} is being installed on {asset}; it'll be ready after your next restart.", 2),
    Kind("hardware", "My laptop {asset} won't turn on since this morning.",
         ("lookup_employee", "get_device", "create_hardware_ticket", "book_courier"),
         "I've opened hardware ticket {ticket} and a courier will pick the laptop up "
         "tomorrow; a loaner is ready at the front desk.", 2),
)

FAULTS = (
    Fault("identity", "verify", "security", (
        "The password was reset without verifying the caller's identity.",
        "No identity check (callback or security questions) before the reset, which "
        "policy requires.",
        "Anyone could have asked for this reset: the agent never confirmed who was "
        "calling."), kinds=("password",),
        calls=("lookup_employee", "reset_password", "add_ticket_comment"), weight=3),
    Fault("approval", "approval", "security", (
        "Access to {system} was given on the employee's word; the manager's approval "
        "was never requested.",
        "The agent accepted the claim that {manager} approved instead of getting the "
        "approval through the system.",
        "Restricted folders need recorded manager sign-off, and there is none for this "
        "grant."), kinds=("access",),
        calls=("lookup_employee", "get_access_policy", "grant_access", "add_ticket_comment"),
        weight=3),
    Fault("least_privilege", "read-only", "security", (
        "Write access was granted where the request only needed read access.",
        "The permission level is too broad: {system} was opened for editing, not just "
        "viewing.",
        "Least privilege not applied; the employee got modify rights to {system}."),
        kinds=("access",), weight=2),
    Fault("license", "license", "resolution", (
        "No free {app} license was checked before installing, so the install will fail "
        "activation.",
        "The license pool for {app} is empty and the agent pushed the install anyway.",
        "Installing without assigning a seat: {app} will run unlicensed."),
        kinds=("software",),
        calls=("lookup_employee", "push_install", "add_ticket_comment"), weight=3),
    Fault("warranty", "warranty", "resolution", (
        "Laptop {asset} is still under warranty; the repair should go to the vendor, "
        "not the internal workshop.",
        "The device is covered by the vendor's warranty and was sent to internal "
        "repair.",
        "Warranty status was ignored when routing the broken laptop."),
        kinds=("hardware",), weight=2),
    Fault("restart", "restart", "communication", (
        "The employee is not told to save their work before the forced restart.",
        "Nothing warns the user that the install restarts the laptop.",
        "The reply should mention the automatic reboot so no work is lost."),
        kinds=("software",), reply="{app} will be installed on {asset}.", weight=2,
        credit=0.5),
    Fault("narrated_reset", "reset_password", "resolution", (
        "The account is still locked: no reset was actually performed.",
        "The reply claims the password was reset, but the account shows no change.",
        "Nothing was done to the account although the user was told it was."),
        kinds=("password",), calls=("lookup_employee", "verify_identity"),
        reply="Your password has been reset. Check your phone for the temporary one.",
        weight=2),
    Fault("claimed_grant", "grant_access", "resolution", (
        "The ticket got a comment but {system} permissions were never changed.",
        "Access was promised as done; the folder's permissions are unchanged.",
        "The employee still cannot open {system}: only a ticket note was written."),
        kinds=("access",), calls=("lookup_employee", "get_access_policy",
                                  "request_manager_approval", "add_ticket_comment"),
        weight=2),
    Fault("eta", "loaner", "communication", (
        "The reply gives no time frame for the repair.",
        "The employee is not told how long they will be without a laptop.",
        "No mention of the loaner device or when the laptop comes back."),
        kinds=("hardware",), reply="I've opened hardware ticket {ticket}.", weight=2,
        credit=0.5),
)

USERS = ("j.martin", "a.kowalski", "s.nakamura", "r.adeyemi", "l.fischer", "m.dubois")
SYSTEMS = ("Finance-Reports", "HR-Confidential", "Design-Assets", "Sales-Forecasts")
MANAGERS = ("Dana Whitfield", "Omar Haddad", "Ingrid Berg", "Luis Ortega")
APPS = ("Adobe Photoshop", "Tableau Desktop", "AutoCAD", "JetBrains PyCharm", "Visio")


def facts(rng: random.Random, kind: str) -> dict[str, str]:
    return {"user": rng.choice(USERS), "system": rng.choice(SYSTEMS),
            "manager": rng.choice(MANAGERS), "app": rng.choice(APPS),
            "asset": f"LT-{rng.randint(1000, 9999)}", "ticket": ref(rng, "HW", 5),
            "ref": ref(rng, "INC", 7)}


def layout(causes: list[Cause], parts: dict[str, float], rng: random.Random) -> str:
    """A verdict line, then the reasons as a numbered list (in the order given)."""
    lines = ["Verdict: FAIL"]
    for n, cause in enumerate(causes, start=1):
        lines.append(f"{n}) {cause.text}")
    return "\n".join(lines)


SPEC = Spec("it_helpdesk", KINDS, FAULTS, ("resolution", "security", "communication"),
            READ, facts, layout, ("Verdict: PASS",))


class ItHelpdeskAdapter(SimAdapter):
    """The IT service desk (see the module docstring)."""

    spec = SPEC
