// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// A destination that refuses every payment (a contract without a payable receive, a closed
/// deposit contract): each send to it reverts and burns its gas.
contract RevertingReceiver {
	receive() external payable {
		revert("RevertingReceiver: no payments");
	}
}
